//! An account's lifecycle, in one place for the admin API, SCIM and single sign-on: a change
//! that ends the account's access (disabled, or its role changed) bumps its token version
//! (access tokens die), revokes its refresh tokens when it is disabled (API keys are checked
//! against the account's state on every call, so they stop with it), and stops its running
//! turns on every process. Deleting an account does the same and removes its files.
//!
//! The stop is a NOTIFY sent in the change's own transaction: Postgres delivers it at the
//! COMMIT, so a change that rolls back stops nothing, and one that commits cannot forget it.

use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use uuid::Uuid;

use crate::cluster::channel::{self, Stop};
use crate::db::models::user::{self, Updated, User, UserChangeError, UserChanges};

/// Applies `changes` to account `id`; when they end its access, everything that speaks for
/// it stops ([module docs](self)). Runs inside the caller's transaction, if any.
pub async fn update(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    changes: UserChanges,
) -> Result<Updated, UserChangeError> {
    conn.transaction(|conn| {
        async move {
            let updated = user::update(conn, id, changes).await?;
            if updated.ends_access() {
                channel::broadcast(conn, Stop::User(id)).await?;
            }
            Ok(updated)
        }
        .scope_boxed()
    })
    .await
}

/// Deletes account `id` (recorded as deleted by `by`) and stops its turns wherever they
/// run; their rows are gone, so nothing more is written. The caller removes its files once
/// this has committed ([`crate::files::WorkspaceStore::remove_all`]).
pub async fn delete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    by: Uuid,
    keep_local_admin: bool,
) -> Result<User, UserChangeError> {
    conn.transaction(|conn| {
        async move {
            let gone = user::delete(conn, id, by, keep_local_admin).await?;
            channel::broadcast(conn, Stop::User(id)).await?;
            Ok(gone)
        }
        .scope_boxed()
    })
    .await
}
