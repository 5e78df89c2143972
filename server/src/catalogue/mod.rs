//! The model catalogue as one room: every model users may pick, the providers serving them,
//! their prices and circuit breakers, the entries the admin API added (stored, shared by
//! every process) and who may use which model. The rest of the server holds one
//! [`Catalogue`] and asks it what is offered [`Catalogue::now`], whether a role may use a
//! model [`Catalogue::allows`], what it costs [`Catalogue::price`], and to re-read the
//! stored entries [`Catalogue::reload`]. `llm/` keeps only the provider adapters.

pub mod access;
pub mod breaker;
pub mod breaker_sync;
pub mod edit;
mod edit_models;
mod edit_write;
pub mod entry;
mod error;
mod live;
mod snapshot;
mod sync;

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::config::Settings;
use crate::domain::pricing::Price;

pub use access::RoleModels;
pub use breaker::Breakers;
pub use edit::ProviderBody;
pub use error::CatalogueError;
pub use live::{AddedEntries, LiveCatalogue, RetryHooks};
pub use snapshot::{
    allows, legacy_provider, CatalogueModel, Snapshot, Source, ALL_MODELS, DEFAULT_PROVIDER,
};

/// The catalogue in force and the providers' breakers, cheap to clone: the turn, the
/// routes and the signals from other processes share one.
#[derive(Clone)]
pub struct Catalogue {
    settings: Arc<Settings>,
    live: Arc<LiveCatalogue>,
    breakers: Arc<Breakers>,
}

impl Catalogue {
    /// A catalogue that stays as given until reloaded, a breaker per provider (tests'
    /// scripted models).
    pub fn fixed(settings: Arc<Settings>, snapshot: Snapshot) -> Self {
        let breakers = Arc::new(Breakers::new(
            snapshot.provider_names(),
            settings.llm.breaker(),
        ));
        let hooks: RetryHooks = Arc::new(|_| crate::llm::http::RetryHook::default());
        Self {
            settings,
            live: Arc::new(LiveCatalogue::fixed(snapshot, hooks)),
            breakers,
        }
    }

    /// The catalogue in force: one consistent reading, kept for as long as the caller needs.
    pub fn now(&self) -> Arc<Snapshot> {
        self.live.now()
    }

    /// Whether the catalogue offers `model` and a role's `models` list allows it.
    pub fn allows(&self, role_models: &[String], model: &str) -> bool {
        self.now().get(model).is_some() && allows(role_models, model)
    }

    /// The price of `model` in force at `at`, if the catalogue offers it and it is priced.
    pub fn price(&self, model: &str, at: DateTime<Utc>) -> Option<Price> {
        self.now().get(model).and_then(|m| m.price_at(at))
    }

    /// Each provider's circuit breaker.
    pub fn breakers(&self) -> &Arc<Breakers> {
        &self.breakers
    }
}
