//! An admin's change to web search as one [`AdminWrite`]: a stored provider saved or
//! removed, or a role's search rules saved, each with its trail row in one transaction.
//! Nothing is cached: the next search reads what was stored.

use async_trait::async_trait;
use diesel_async::AsyncPgConnection;

use crate::config::SearchProviderConfig;
use crate::db::models::admin_change::{AdminWrite, NewChange};
use crate::db::sealed::SealingKey;
use crate::websearch::rules::{self, SearchRules};
use crate::websearch::store;

/// What is done to the search settings.
pub(super) enum Op<'a> {
    /// A provider saved (inserted or replaced), its key sealed under `key`.
    SaveProvider {
        config: &'a SearchProviderConfig,
        key: Option<&'a SealingKey>,
    },
    /// A provider removed by name.
    DeleteProvider(&'a str),
    /// A role's rules saved.
    SaveRules {
        role: &'a str,
        rules: &'a SearchRules,
    },
}

pub(super) struct SearchWrite<'a> {
    pub op: Op<'a>,
    /// The trail row, written whatever the store found (as before).
    pub change: NewChange,
}

#[async_trait]
impl AdminWrite for SearchWrite<'_> {
    type Output = ();
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<(), Self::Error> {
        match &self.op {
            Op::SaveProvider { config, key } => store::save(conn, config, *key).await,
            Op::DeleteProvider(name) => store::delete(conn, name).await.map(|_| ()),
            Op::SaveRules { role, rules } => rules::save(conn, role, rules).await,
        }
    }

    fn trail(&self, _: &()) -> Option<NewChange> {
        Some(self.change.clone())
    }
}
