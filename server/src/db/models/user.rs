//! Accounts.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::lower;
use crate::db::schema::users::{self, dsl};

/// Serialises account changes that depend on the set of admins (first user, last admin).
const ADMIN_SET_LOCK_KEY: i64 = 0x5553_4552_5345_5421; // "USERSET!"

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = users)]
pub struct User {
    pub id: Uuid,
    pub username: String,
    pub password_hash: String,
    pub role: String,
    pub disabled: bool,
    pub token_version: i32,
    pub token_budget: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Where the account comes from: [`SOURCE_PASSWORD`], [`SOURCE_SSO`] or [`SOURCE_SCIM`].
    pub source: String,
}

/// Registered, or created by an admin, with a local password.
pub const SOURCE_PASSWORD: &str = "password";
/// Created at its first single sign-on; no usable local password.
pub const SOURCE_SSO: &str = "sso";
/// Provisioned by the identity provider over SCIM; no usable local password.
pub const SOURCE_SCIM: &str = "scim";

/// What the API shows of an account (never the hash).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct UserView {
    pub id: Uuid,
    pub username: String,
    pub role: String,
    pub disabled: bool,
    pub token_budget: Option<i64>,
    pub created_at: DateTime<Utc>,
    /// `password`, `sso` or `scim`.
    pub source: String,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        Self {
            id: u.id,
            username: u.username,
            role: u.role,
            disabled: u.disabled,
            token_budget: u.token_budget,
            created_at: u.created_at,
            source: u.source,
        }
    }
}

/// The few columns every authenticated request checks.
#[derive(Debug, Clone, Queryable)]
pub struct AuthState {
    pub username: String,
    pub role: String,
    pub disabled: bool,
    pub token_version: i32,
}

/// Why a validly signed access token no longer admits its bearer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The account is gone.
    NoAccount,
    Disabled,
    /// Signed before the account's tokens were revoked (sign-out everywhere, role change).
    Revoked,
    /// The API key used is revoked (gone).
    KeyRevoked,
    KeyExpired,
}

impl AuthState {
    /// Whether a token carrying `token_version` still speaks for this account.
    pub fn admits(&self, token_version: i32) -> Result<(), Rejection> {
        if self.disabled {
            Err(Rejection::Disabled)
        } else if self.token_version != token_version {
            Err(Rejection::Revoked)
        } else {
            Ok(())
        }
    }
}

#[derive(Insertable)]
#[diesel(table_name = users)]
pub struct NewUser<'a> {
    pub id: Uuid,
    pub username: &'a str,
    pub password_hash: &'a str,
    pub role: &'a str,
}

/// Changes an admin may make to an account; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct UserChanges {
    pub role: Option<String>,
    pub disabled: Option<bool>,
    /// `Some(None)` clears the override (use the role's budget).
    pub token_budget: Option<Option<i64>>,
    /// Refuse to disable or demote the last enabled admin with a local password (the way
    /// back in while single sign-on is in use).
    pub keep_local_admin: bool,
}

/// Why an account change was not made.
#[derive(Debug, thiserror::Error)]
pub enum UserChangeError {
    #[error("no such user")]
    NotFound,
    #[error("the last enabled admin cannot be disabled or demoted")]
    LastAdmin,
    #[error("the last enabled admin with a local password cannot be disabled or demoted")]
    LastLocalAdmin,
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

pub async fn find(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<User>> {
    dsl::users
        .find(id)
        .select(User::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn find_by_username(
    conn: &mut AsyncPgConnection,
    username: &str,
) -> QueryResult<Option<User>> {
    dsl::users
        .filter(lower(dsl::username).eq(username.to_lowercase()))
        .select(User::as_select())
        .first(conn)
        .await
        .optional()
}

/// One indexed lookup: what an access token must still agree with.
pub async fn auth_state(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<AuthState>> {
    dsl::users
        .find(id)
        .select((dsl::username, dsl::role, dsl::disabled, dsl::token_version))
        .first(conn)
        .await
        .optional()
}

/// Inserts an account; the first account ever becomes `admin`, later ones `default_role`.
pub async fn insert_self_registered(
    conn: &mut AsyncPgConnection,
    username: &str,
    password_hash: &str,
    default_role: &str,
) -> QueryResult<User> {
    let username = username.to_owned();
    let password_hash = password_hash.to_owned();
    let default_role = default_role.to_owned();
    conn.transaction(|conn| {
        async move {
            lock_admin_set(conn).await?;
            let any: bool = diesel::select(diesel::dsl::exists(dsl::users.select(dsl::id)))
                .get_result(conn)
                .await?;
            let role = if any {
                default_role.as_str()
            } else {
                super::role::ADMIN
            };
            insert(conn, &username, &password_hash, role).await
        }
        .scope_boxed()
    })
    .await
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    username: &str,
    password_hash: &str,
    role: &str,
) -> QueryResult<User> {
    diesel::insert_into(dsl::users)
        .values(NewUser {
            id: Uuid::new_v4(),
            username,
            password_hash,
            role,
        })
        .returning(User::as_returning())
        .get_result(conn)
        .await
}

/// Inserts an account that comes from the identity provider (`source`: SSO or SCIM).
pub async fn insert_external(
    conn: &mut AsyncPgConnection,
    username: &str,
    unusable_password_hash: &str,
    role: &str,
    source: &str,
) -> QueryResult<User> {
    diesel::insert_into(dsl::users)
        .values((
            NewUser {
                id: Uuid::new_v4(),
                username,
                password_hash: unusable_password_hash,
                role,
            },
            dsl::source.eq(source),
        ))
        .returning(User::as_returning())
        .get_result(conn)
        .await
}

pub async fn list(conn: &mut AsyncPgConnection, limit: i64, offset: i64) -> QueryResult<Vec<User>> {
    dsl::users
        .order((dsl::created_at.asc(), dsl::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(User::as_select())
        .load(conn)
        .await
}

/// Applies `changes`; a role change or a disable bumps the token version so existing
/// access tokens stop working at once. Refuses to leave the server without an enabled admin.
/// An account before and after a change.
#[derive(Debug, Clone)]
pub struct Updated {
    pub before: User,
    pub after: User,
}

impl Updated {
    /// Whether the change ended what the account's tokens and turns may do: it was
    /// disabled, or its role changed (the token version moved).
    pub fn ends_access(&self) -> bool {
        self.after.token_version != self.before.token_version
    }
}

pub async fn update(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    changes: UserChanges,
) -> Result<Updated, UserChangeError> {
    conn.transaction(|conn| {
        async move {
            lock_admin_set(conn).await?;
            let current = find(conn, id).await?.ok_or(UserChangeError::NotFound)?;
            let new_role = changes.role.clone().unwrap_or_else(|| current.role.clone());
            let new_disabled = changes.disabled.unwrap_or(current.disabled);
            let loses_admin = current.role == super::role::ADMIN
                && !current.disabled
                && (new_role != super::role::ADMIN || new_disabled);
            if loses_admin {
                check_other_admins(conn, &current, changes.keep_local_admin).await?;
            }
            let invalidates = new_role != current.role || (new_disabled && !current.disabled);
            let version = current.token_version + i32::from(invalidates);
            let budget = changes.token_budget.unwrap_or(current.token_budget);
            let user = diesel::update(dsl::users.find(id))
                .set((
                    dsl::role.eq(new_role),
                    dsl::disabled.eq(new_disabled),
                    dsl::token_budget.eq(budget),
                    dsl::token_version.eq(version),
                    dsl::updated_at.eq(diesel::dsl::now),
                ))
                .returning(User::as_returning())
                .get_result(conn)
                .await?;
            if new_disabled && !current.disabled {
                super::refresh_token::revoke_all_for_user(conn, id).await?;
            }
            Ok(Updated {
                before: current,
                after: user,
            })
        }
        .scope_boxed()
    })
    .await
}

/// Refuses when `current` is the last enabled admin (or, with `keep_local`, the last one
/// with a local password). Call inside a transaction holding [`lock_admin_set`].
pub async fn check_other_admins(
    conn: &mut AsyncPgConnection,
    current: &User,
    keep_local: bool,
) -> Result<(), UserChangeError> {
    let others: i64 = dsl::users
        .filter(dsl::role.eq(super::role::ADMIN))
        .filter(dsl::disabled.eq(false))
        .filter(dsl::id.ne(current.id))
        .count()
        .get_result(conn)
        .await?;
    if others == 0 {
        return Err(UserChangeError::LastAdmin);
    }
    if keep_local && current.source == SOURCE_PASSWORD {
        let local: i64 = dsl::users
            .filter(dsl::role.eq(super::role::ADMIN))
            .filter(dsl::disabled.eq(false))
            .filter(dsl::source.eq(SOURCE_PASSWORD))
            .filter(dsl::id.ne(current.id))
            .count()
            .get_result(conn)
            .await?;
        if local == 0 {
            return Err(UserChangeError::LastLocalAdmin);
        }
    }
    Ok(())
}

/// Deletes an account in the caller's transaction: its conversations, messages, keys,
/// sessions, budget periods and identities go with it (foreign keys cascade); tool-call
/// audit rows keep the username and the usage ledger keeps its rows, named by the
/// tombstone written here. Returns the account as it was.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    deleted_by: Uuid,
    keep_local_admin: bool,
) -> Result<User, UserChangeError> {
    use crate::db::schema::deleted_users;
    lock_admin_set(conn).await?;
    let current = find(conn, id).await?.ok_or(UserChangeError::NotFound)?;
    if current.role == super::role::ADMIN && !current.disabled {
        check_other_admins(conn, &current, keep_local_admin).await?;
    }
    diesel::insert_into(deleted_users::table)
        .values((
            deleted_users::id.eq(id),
            deleted_users::username.eq(&current.username),
            deleted_users::deleted_by.eq(Some(deleted_by)),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    diesel::delete(dsl::users.find(id)).execute(conn).await?;
    Ok(current)
}

/// Stores a new password hash and bumps the token version (every access token dies);
/// returns the new version.
pub async fn set_password(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    password_hash: &str,
) -> QueryResult<i32> {
    diesel::update(dsl::users.find(id))
        .set((
            dsl::password_hash.eq(password_hash),
            dsl::token_version.eq(dsl::token_version + 1),
            dsl::updated_at.eq(diesel::dsl::now),
        ))
        .returning(dsl::token_version)
        .get_result(conn)
        .await
}

/// Serialises changes to the set of enabled admins (take it inside a transaction).
pub async fn lock_admin_set(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    diesel::sql_query(format!(
        "SELECT pg_advisory_xact_lock({ADMIN_SET_LOCK_KEY})"
    ))
    .execute(conn)
    .await
    .map(|_| ())
}

/// Whether any account exists yet (the start message says who becomes admin).
pub async fn any_exist(conn: &mut AsyncPgConnection) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(dsl::users.select(dsl::id)))
        .get_result(conn)
        .await
}
