//! Accounts: the rows, finding and inserting them, their access state. Admin changes and
//! deletes are in [`super::user_change`].

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::lower;
pub use super::user_change::{
    check_other_admins, delete, update, Updated, UserChangeError, UserChanges,
};
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
    // Raw SQL: an advisory lock.
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
