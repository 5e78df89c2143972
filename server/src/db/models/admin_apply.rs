//! The one way an administrative change is made: checked, written together with its trail
//! row in one transaction (the change and its record stand or fall together), and announced
//! to caches and other processes only after the commit.
//!
//! A change is a value implementing [`AdminWrite`]; routes and services hand it to
//! [`apply`] with a connection and get the write's output back.

use async_trait::async_trait;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};

use super::admin_change::{record, NewChange};

/// One administrative change.
#[async_trait]
pub trait AdminWrite: Send + Sync {
    /// What the write answers (the saved row, whether it found anything, ...).
    type Output: Send;
    /// Its refusal; the database's errors become one.
    type Error: From<diesel::result::Error> + Send;

    /// Checks that need no transaction; a refusal writes nothing.
    fn validate(&self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The write, on the change's transaction.
    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<Self::Output, Self::Error>;

    /// The trail row of what `write` did; `None` when it changed nothing (a row not found).
    fn trail(&self, out: &Self::Output) -> Option<NewChange>;

    /// After the commit: tell caches and other processes (failures are theirs to log).
    async fn notify(&self, _conn: &mut AsyncPgConnection, _out: &Self::Output) {}
}

/// Validates `change`, writes it and its trail row in one transaction, then notifies.
pub async fn apply<C: AdminWrite>(
    conn: &mut AsyncPgConnection,
    change: C,
) -> Result<C::Output, C::Error> {
    change.validate()?;
    let change_ref = &change;
    let out = conn
        .transaction(|conn| {
            async move {
                let out = change_ref.write(conn).await?;
                if let Some(row) = change_ref.trail(&out) {
                    record(conn, row).await?;
                }
                Ok::<_, C::Error>(out)
            }
            .scope_boxed()
        })
        .await?;
    change.notify(conn, &out).await;
    Ok(out)
}
