//! The catalogue every process serves: the configuration's entries plus those the admin API
//! stored. A change through the API rebuilds it here and says `catalogue` on the channel;
//! every other process then reads the stored entries and rebuilds its own. A process that
//! starts, or whose listener reconnects, reads them too. The breakers travel the same way
//! ([`super::breaker_sync`]).

use std::sync::Arc;

use diesel_async::AsyncPgConnection;

use super::{entry, AddedEntries, Breakers, Catalogue, LiveCatalogue, RetryHooks};
use crate::cluster::channel::{self, Signal};
use crate::config::{ProviderKind, Settings};

impl Catalogue {
    /// The configuration's catalogue (the stored entries join at the first reload), with a
    /// breaker per provider and retries counted per provider kind.
    pub fn build(
        settings: Arc<Settings>,
        metrics: &Arc<crate::metrics::Metrics>,
    ) -> Result<Self, crate::llm::LlmError> {
        let hooks: RetryHooks = {
            let metrics = metrics.clone();
            Arc::new(move |kind| {
                let label = match kind {
                    ProviderKind::Openai => "openai",
                    ProviderKind::Anthropic => "anthropic",
                    ProviderKind::Demo => "demo",
                };
                let retries = metrics.upstream_retries.with_label_values(&[label]);
                crate::llm::http::RetryHook::new(move || retries.inc())
            })
        };
        let live = Arc::new(LiveCatalogue::from_settings(&settings, hooks)?);
        let breakers = Arc::new(Breakers::new(
            live.now().provider_names(),
            settings.llm.breaker(),
        ));
        Ok(Self {
            settings,
            live,
            breakers,
        })
    }

    /// Reads the stored entries and rebuilds the catalogue with them; each provider keeps
    /// its breaker, new ones get one.
    pub async fn reload(&self, conn: &mut AsyncPgConnection) -> Result<(), String> {
        let _one_at_a_time = self.live.reloading.lock().await;
        let key = crate::db::sealed::SealingKey::of(&self.settings);
        let (providers, models) = entry::list(conn, key.as_ref())
            .await
            .map_err(|e| e.to_string())?;
        let added = AddedEntries { providers, models };
        self.live
            .rebuild(&self.settings, &added)
            .map_err(|e| e.to_string())?;
        self.breakers.keep_only(self.live.now().provider_names());
        Ok(())
    }

    /// Reloads in the background (a notification from another process).
    pub fn spawn_reload(&self, pool: crate::db::Pool) {
        let parts = self.clone();
        tokio::spawn(async move {
            let done = match pool.get().await {
                Ok(mut conn) => parts.reload(&mut conn).await,
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = done {
                tracing::warn!(error = %e, "could not re-read the model catalogue after a change");
            }
        });
    }

    /// Re-reads the breakers other processes shared (at start, and when one says so).
    pub async fn adopt_breakers(&self, conn: &mut AsyncPgConnection) -> diesel::QueryResult<()> {
        super::breaker_sync::adopt_all(conn, &self.breakers).await
    }

    /// Re-reads the shared breakers in the background.
    pub fn spawn_adopt_breakers(&self, pool: crate::db::Pool) {
        super::breaker_sync::spawn_adopt(pool, self.breakers.clone());
    }

    /// The settings the catalogue is built from (the sealing key of stored provider keys).
    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }
}

/// Tells the other processes to re-read the catalogue. The change is stored: a lost notice
/// is caught up when a process's listener reconnects, so it does not fail the request.
pub async fn tell_other_processes(conn: &mut AsyncPgConnection) {
    if let Err(e) = channel::signal(conn, Signal::CatalogueChanged).await {
        tracing::warn!(error = %e, "could not tell the other processes about a catalogue change");
    }
}
