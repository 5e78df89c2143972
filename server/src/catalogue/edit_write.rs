//! A catalogue change as one [`AdminWrite`]: the entry and its trail row in one
//! transaction, then the catalogue rebuilt here and the other processes told.

use async_trait::async_trait;
use diesel_async::AsyncPgConnection;

use super::edit::Store;
use super::entry;
use super::{Catalogue, CatalogueError};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::sealed::SealingKey;

struct CatalogueWrite<'a> {
    catalogue: &'a Catalogue,
    store: Store<'a>,
    change: NewChange,
    /// The key a provider's API key is sealed under (none: stored in clear).
    key: Option<SealingKey>,
}

#[async_trait]
impl AdminWrite for CatalogueWrite<'_> {
    /// Whether the entry was stored (`false`: another admin got there first).
    type Output = bool;
    type Error = CatalogueError;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<bool, CatalogueError> {
        let key = self.key.as_ref();
        Ok(match self.store {
            Store::Insert(e) => entry::insert(conn, e, key).await?,
            Store::Update(e) => entry::update(conn, e, key).await?,
            Store::Delete(kind, name) => entry::delete(conn, kind, name).await?,
        })
    }

    fn trail(&self, stored: &bool) -> Option<NewChange> {
        stored.then(|| self.change.clone())
    }

    async fn notify(&self, conn: &mut AsyncPgConnection, stored: &bool) {
        if !stored {
            return;
        }
        if let Err(e) = self.catalogue.reload(conn).await {
            tracing::warn!(error = %e, "the catalogue could not be rebuilt after a change");
        }
        super::sync::tell_other_processes(conn).await;
    }
}

impl Catalogue {
    /// Stores the change and its trail row through [`admin_change::apply`]; a change that
    /// found nothing to store (a lost race) is [`CatalogueError::Changed`].
    pub(super) async fn commit(
        &self,
        conn: &mut AsyncPgConnection,
        store: Store<'_>,
        change: NewChange,
    ) -> Result<(), CatalogueError> {
        let write = CatalogueWrite {
            catalogue: self,
            store,
            change,
            key: SealingKey::of(self.settings()),
        };
        if admin_change::apply(conn, write).await? {
            Ok(())
        } else {
            Err(CatalogueError::Changed)
        }
    }
}
