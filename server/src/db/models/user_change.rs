//! Changing and deleting accounts as an admin does: the token version moves when access
//! ends, and the server is never left without an enabled admin (changes that touch the set
//! of admins take its lock, [`super::user::lock_admin_set`]). The turns a change stops are
//! [`crate::accounts`]'s job.

use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::user::{find, lock_admin_set, User, SOURCE_PASSWORD};
use crate::db::schema::users::dsl;

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

/// Applies `changes`; a role change or a disable bumps the token version so existing
/// access tokens stop working at once. Refuses to leave the server without an enabled admin.
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
