//! The model catalogue as one reading: every model users may pick, by public name, with the provider client
//! that serves it, its limits and its prices. A turn resolves its conversation's model here
//! once per model call (a map lookup; nothing is read from the database).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::config::catalogue::{default_input, DEFAULT_MAX_IMAGES, DEFAULT_MAX_IMAGE_BYTES};
use crate::config::{InputKind, LlmSettings, PriceConfig, ProviderConfig, ProviderKind};
use crate::domain::pricing::Price;
use crate::llm::{ChatRequest, LlmError, LlmProvider};

/// A role's `models` entry that allows every model in the catalogue.
pub const ALL_MODELS: &str = "*";

/// The name of the `[llm]` provider when no `[[models]]` are configured.
pub const DEFAULT_PROVIDER: &str = "default";

/// `llm.models` on the `[llm]` provider's client, with the `[llm]` limits and no price.
pub(super) fn legacy_models(
    client: &Arc<dyn LlmProvider>,
    llm: &LlmSettings,
) -> Vec<CatalogueModel> {
    llm.models
        .iter()
        .map(|name| CatalogueModel {
            name: name.clone(),
            provider: DEFAULT_PROVIDER.to_owned(),
            kind: llm.provider,
            upstream_model: name.clone(),
            context_window: llm.context_window_tokens,
            max_output: llm.max_output_tokens,
            prices: Vec::new(),
            fallbacks: Vec::new(),
            input: default_input(llm.provider),
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_images: DEFAULT_MAX_IMAGES,
            client: client.clone(),
            source: Source::Config,
        })
        .collect()
}

/// The `[llm]` settings as a provider entry.
pub fn legacy_provider(llm: &LlmSettings) -> ProviderConfig {
    ProviderConfig {
        name: DEFAULT_PROVIDER.to_owned(),
        kind: llm.provider,
        base_url: llm.base_url.clone(),
        api_key: llm.api_key.clone(),
        connect_timeout_secs: None,
        first_byte_timeout_secs: None,
        idle_timeout_secs: None,
        request_timeout_secs: None,
        max_retries: None,
    }
}

/// One model as turns use it.
pub struct CatalogueModel {
    /// The public name (conversations, `/v1` requests and role lists name it).
    pub name: String,
    /// The `[[providers]]` entry serving it (`default` for the `[llm]` provider).
    pub provider: String,
    pub kind: ProviderKind,
    /// The provider's id of the model.
    pub upstream_model: String,
    pub context_window: u64,
    pub max_output: u32,
    /// Oldest first; the one in force is the last that has started.
    pub(super) prices: Vec<PriceConfig>,
    pub fallbacks: Vec<String>,
    /// What it reads (always text; images too when it lists them).
    pub input: Vec<InputKind>,
    /// Largest image a request may give it, in bytes.
    pub max_image_bytes: u64,
    /// Most images one request may give it.
    pub max_images: u32,
    pub client: Arc<dyn LlmProvider>,
    pub source: Source,
}

impl CatalogueModel {
    /// The price in force at `now`, if the model is priced.
    pub fn price_at(&self, now: DateTime<Utc>) -> Option<Price> {
        self.prices
            .iter()
            .rev()
            .find(|p| p.effective_from.is_none_or(|from| from <= now))
            .map(|p| Price {
                currency: p.currency.clone(),
                input: p.input,
                output: p.output,
                cache_read: p.cache_read.unwrap_or(p.input),
                cache_write: p.cache_write.unwrap_or(p.input),
            })
    }

    /// Whether it reads images (a request with one to a model that does not is refused).
    pub fn takes_images(&self) -> bool {
        self.input.contains(&InputKind::Image)
    }

    /// Whether any price is configured (an unpriced model never meets a money budget).
    pub fn is_priced(&self) -> bool {
        !self.prices.is_empty()
    }

    pub fn prices(&self) -> &[PriceConfig] {
        &self.prices
    }
}

/// Where a catalogue entry comes from: the configuration (changed there) or the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Config,
    Api,
}

/// Every model, configuration's first, then the admin API's, each in the order listed.
pub struct Snapshot {
    models: Vec<Arc<CatalogueModel>>,
    by_name: HashMap<String, usize>,
    default: String,
    /// The providers serving them, with where each comes from.
    providers: Vec<(ProviderConfig, Source)>,
}

impl Snapshot {
    /// `llm.models` served by one client (the `[llm]` settings, or a test's scripted model).
    pub fn single(client: Arc<dyn LlmProvider>, llm: &LlmSettings) -> Self {
        Self::new(
            legacy_models(&client, llm),
            llm.model.clone(),
            vec![(legacy_provider(llm), Source::Config)],
        )
    }

    pub(super) fn new(
        models: Vec<CatalogueModel>,
        default: String,
        providers: Vec<(ProviderConfig, Source)>,
    ) -> Self {
        let models: Vec<_> = models.into_iter().map(Arc::new).collect();
        let by_name = models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i))
            .collect();
        Self {
            models,
            by_name,
            default,
            providers,
        }
    }

    /// The providers, configuration's first, with where each comes from.
    pub fn providers(&self) -> &[(ProviderConfig, Source)] {
        &self.providers
    }

    /// The model named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<CatalogueModel>> {
        self.by_name.get(name).map(|&i| &self.models[i])
    }

    /// The model `request` names, and the request as its provider reads it (the upstream
    /// id; the output cap within the model's).
    pub fn route(
        &self,
        mut request: ChatRequest,
    ) -> Result<(Arc<CatalogueModel>, ChatRequest), LlmError> {
        let Some(model) = self.get(&request.model) else {
            return Err(LlmError::Config(format!(
                "the model `{}` is no longer offered",
                crate::llm::truncate_chars(&request.model, 64)
            )));
        };
        request.model = model.upstream_model.clone();
        request.max_tokens = Some(
            request
                .max_tokens
                .map_or(model.max_output, |cap| cap.min(model.max_output)),
        );
        Ok((model.clone(), request))
    }

    /// `gen_ai.provider.name` of the model named `name`.
    pub fn provider_name_of(&self, name: &str) -> &'static str {
        self.get(name)
            .map(|m| m.client.provider_name())
            .unwrap_or("unknown")
    }

    /// The model new conversations get when nothing else names one.
    pub fn default_model(&self) -> &str {
        &self.default
    }

    /// Every model, in configuration order.
    pub fn models(&self) -> &[Arc<CatalogueModel>] {
        &self.models
    }

    /// Every provider's name.
    pub fn provider_names(&self) -> Vec<&str> {
        self.providers
            .iter()
            .map(|(p, _)| p.name.as_str())
            .collect()
    }

    /// The models a role's `models` list allows, in configuration order.
    pub fn allowed<'a>(
        &'a self,
        role_models: &'a [String],
    ) -> impl Iterator<Item = &'a Arc<CatalogueModel>> {
        self.models
            .iter()
            .filter(move |m| allows(role_models, &m.name))
    }

    /// The widest context window (how much history a turn start reads before it knows the
    /// conversation's model).
    pub fn largest_context_window(&self) -> u64 {
        self.models
            .iter()
            .map(|m| m.context_window)
            .max()
            .unwrap_or(0)
    }

    /// The currencies models are priced in (one per model), in catalogue order.
    pub fn currencies(&self) -> Vec<&str> {
        let mut all: Vec<&str> = Vec::new();
        for p in self.models.iter().flat_map(|m| m.prices.iter()) {
            if !all.contains(&p.currency.as_str()) {
                all.push(&p.currency);
            }
        }
        all
    }

    /// The largest output cap of any model.
    pub fn largest_max_output(&self) -> u32 {
        self.models.iter().map(|m| m.max_output).max().unwrap_or(0)
    }

    /// The model a new conversation of a user with these role models gets: the preferred one
    /// when allowed, else the default when allowed, else the first allowed.
    pub fn pick_for<'a>(
        &'a self,
        role_models: &[String],
        preferred: Option<&str>,
    ) -> Option<&'a str> {
        let allowed = |name: &str| self.get(name).is_some() && allows(role_models, name);
        preferred
            .filter(|p| allowed(p))
            .or_else(|| Some(self.default.as_str()).filter(|d| allowed(d)))
            .or_else(|| {
                self.models
                    .iter()
                    .find(|m| allows(role_models, &m.name))
                    .map(|m| m.name.as_str())
            })
            .and_then(|name| self.get(name).map(|m| m.name.as_str()))
    }
}

/// Whether a role's `models` list allows `model` (`*` allows all).
pub fn allows(role_models: &[String], model: &str) -> bool {
    role_models.iter().any(|m| m == model || m == ALL_MODELS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_settings_are_a_one_provider_catalogue() {
        let llm = LlmSettings {
            models: vec!["demo".into(), "demo-large".into()],
            ..Default::default()
        };
        let client = crate::llm::from_settings(&llm, crate::llm::http::RetryHook::default());
        assert!(client.is_ok());
        let Ok(client) = client else { return };
        let c = Snapshot::single(client, &llm);
        assert_eq!(c.default_model(), "demo");
        assert_eq!(c.models().len(), 2);
        assert!(c.get("demo-large").is_some_and(|m| !m.is_priced()));
        let member = vec!["demo-large".to_owned()];
        assert_eq!(c.pick_for(&member, None), Some("demo-large"));
        assert_eq!(c.pick_for(&[], None), None);
        let all = vec![ALL_MODELS.to_owned()];
        assert_eq!(c.pick_for(&all, Some("demo-large")), Some("demo-large"));
        assert_eq!(c.pick_for(&all, Some("gone")), Some("demo"));
        assert_eq!(c.allowed(&member).count(), 1);
    }
}
