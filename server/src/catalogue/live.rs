//! The catalogue as it is now: the configuration's providers and models plus those the admin
//! API added (stored in the database), rebuilt whenever either changes and swapped in whole,
//! so a turn reads one consistent catalogue with a read lock and an `Arc` clone.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::snapshot::{legacy_provider, CatalogueModel, Snapshot, Source, DEFAULT_PROVIDER};
use crate::config::catalogue::{default_input, DEFAULT_MAX_IMAGES, DEFAULT_MAX_IMAGE_BYTES};
use crate::config::{ModelConfig, ProviderConfig, ProviderKind, Settings};
use crate::llm::{from_entry, from_settings, http, LlmError, LlmProvider};

/// What the admin API added on top of the configuration.
#[derive(Debug, Clone, Default)]
pub struct AddedEntries {
    pub providers: Vec<ProviderConfig>,
    pub models: Vec<ModelConfig>,
}

/// Builds the retry hook of one provider (a counter per provider kind).
pub type RetryHooks = Arc<dyn Fn(ProviderKind) -> http::RetryHook + Send + Sync>;

/// The catalogue in force, replaced whole when an admin changes it.
pub struct LiveCatalogue {
    current: RwLock<Arc<Snapshot>>,
    hooks: RetryHooks,
    /// Held across reading the stored entries and swapping the rebuilt catalogue in, so
    /// two reloads cannot finish in the wrong order.
    pub reloading: tokio::sync::Mutex<()>,
}

impl LiveCatalogue {
    /// The configuration's catalogue (the admin API's entries join with [`Self::rebuild`]).
    pub fn from_settings(settings: &Settings, hooks: RetryHooks) -> Result<Self, LlmError> {
        let catalogue = build(settings, &AddedEntries::default(), hooks.as_ref())?;
        Ok(Self::fixed(catalogue, hooks))
    }

    /// A catalogue that stays as given until rebuilt (tests' scripted models).
    pub fn fixed(catalogue: Snapshot, hooks: RetryHooks) -> Self {
        Self {
            current: RwLock::new(Arc::new(catalogue)),
            hooks,
            reloading: tokio::sync::Mutex::new(()),
        }
    }

    /// The catalogue in force.
    pub fn now(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Rebuilds it from the configuration and the admin API's entries.
    pub fn rebuild(&self, settings: &Settings, added: &AddedEntries) -> Result<(), LlmError> {
        let catalogue = Arc::new(build(settings, added, self.hooks.as_ref())?);
        match self.current.write() {
            Ok(mut c) => *c = catalogue,
            Err(poisoned) => *poisoned.into_inner() = catalogue,
        }
        Ok(())
    }
}

/// `[[providers]]` + `[[models]]` (or the `[llm]` provider serving `llm.models` when none are
/// configured), then the admin API's providers and models. An added entry that cannot be
/// built (its provider gone, say) is left out with a warning rather than failing the rest.
fn build(
    settings: &Settings,
    added: &AddedEntries,
    hooks: &(dyn Fn(ProviderKind) -> http::RetryHook + Send + Sync),
) -> Result<Snapshot, LlmError> {
    let llm = &settings.llm;
    let legacy = settings.models.is_empty();
    let mut clients: HashMap<String, (ProviderKind, Arc<dyn LlmProvider>)> = HashMap::new();
    let mut providers = Vec::new();
    let mut models = Vec::new();
    if legacy {
        let client = from_settings(llm, hooks(llm.provider))?;
        clients.insert(DEFAULT_PROVIDER.to_owned(), (llm.provider, client));
        providers.push((legacy_provider(llm), Source::Config));
    } else {
        for p in &settings.providers {
            let client = from_entry(p, llm, hooks(p.kind))?;
            clients.insert(p.name.clone(), (p.kind, client));
            providers.push((p.clone(), Source::Config));
        }
    }
    for p in &added.providers {
        // The configuration wins a name clash (it may have gained the name later).
        if clients.contains_key(&p.name) {
            tracing::warn!(provider = %p.name,
                "a provider added through the admin API has a configured provider's name; left out");
            continue;
        }
        match from_entry(p, llm, hooks(p.kind)) {
            Ok(client) => {
                clients.insert(p.name.clone(), (p.kind, client));
                providers.push((p.clone(), Source::Api));
            }
            Err(e) => tracing::warn!(provider = %p.name, error = %e,
                "a provider added through the admin API cannot be built; left out"),
        }
    }
    if legacy {
        if let Some((_, client)) = clients.get(DEFAULT_PROVIDER) {
            models.extend(super::snapshot::legacy_models(client, llm));
        }
    }
    let configured = if legacy {
        &[][..]
    } else {
        &settings.models[..]
    };
    let entries = configured
        .iter()
        .map(|m| (m, Source::Config))
        .chain(added.models.iter().map(|m| (m, Source::Api)));
    for (m, source) in entries {
        let Some((kind, client)) = clients.get(&m.provider) else {
            if source == Source::Config {
                return Err(LlmError::Config(format!(
                    "model `{}` names no provider `{}`",
                    m.name, m.provider
                )));
            }
            tracing::warn!(model = %m.name, provider = %m.provider,
                "a model added through the admin API names no provider; left out");
            continue;
        };
        if models.iter().any(|o: &CatalogueModel| o.name == m.name) {
            tracing::warn!(model = %m.name, "a model is named twice; the first one stays");
            continue;
        }
        let mut prices = m.prices.clone();
        prices.sort_by_key(|p| p.effective_from);
        models.push(CatalogueModel {
            name: m.name.clone(),
            provider: m.provider.clone(),
            kind: *kind,
            upstream_model: match m.upstream_model.trim() {
                "" => m.name.clone(),
                id => id.to_owned(),
            },
            context_window: m.context_window.unwrap_or(llm.context_window_tokens),
            max_output: m.max_output.unwrap_or(llm.max_output_tokens),
            prices,
            fallbacks: m.fallbacks.clone(),
            input: m.input.clone().unwrap_or_else(|| default_input(*kind)),
            max_image_bytes: m.max_image_bytes.unwrap_or(DEFAULT_MAX_IMAGE_BYTES),
            max_images: m.max_images.unwrap_or(DEFAULT_MAX_IMAGES),
            client: client.clone(),
            source,
        });
    }
    let default = if models.iter().any(|m| m.name == llm.model) {
        llm.model.clone()
    } else {
        models.first().map(|m| m.name.clone()).unwrap_or_default()
    };
    Ok(Snapshot::new(models, default, providers))
}
