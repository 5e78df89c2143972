//! The model catalogue: every model users may pick, by public name, with the provider client
//! that serves it, its limits and its prices. A turn resolves its conversation's model here
//! once per model call (a map lookup; nothing is read from the database).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{http, provider, LlmError, LlmProvider};
use crate::config::{LlmSettings, PriceConfig, ProviderKind, Settings};
use crate::domain::pricing::Price;

/// A role's `models` entry that allows every model in the catalogue.
pub const ALL_MODELS: &str = "*";

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
    prices: Vec<PriceConfig>,
    pub fallbacks: Vec<String>,
    pub client: Arc<dyn LlmProvider>,
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

    /// Whether any price is configured (an unpriced model never meets a money budget).
    pub fn is_priced(&self) -> bool {
        !self.prices.is_empty()
    }

    pub fn prices(&self) -> &[PriceConfig] {
        &self.prices
    }
}

/// Every model, in the order the configuration lists them.
pub struct Catalogue {
    models: Vec<Arc<CatalogueModel>>,
    by_name: HashMap<String, usize>,
    default: String,
}

/// Builds the retry hook of one provider (a counter per provider kind).
pub type RetryHooks<'a> = &'a dyn Fn(ProviderKind) -> http::RetryHook;

impl Catalogue {
    /// The catalogue of `settings`: `[[providers]]` + `[[models]]`, or the `[llm]` provider
    /// serving `llm.models` when none are configured.
    pub fn from_settings(settings: &Settings, hooks: RetryHooks<'_>) -> Result<Self, LlmError> {
        let llm = &settings.llm;
        if settings.models.is_empty() {
            let client = provider::from_settings(llm, hooks(llm.provider))?;
            return Ok(Self::single(client, llm));
        }
        let mut clients = HashMap::new();
        for p in &settings.providers {
            clients.insert(
                p.name.as_str(),
                (p.kind, provider::from_entry(p, llm, hooks(p.kind))?),
            );
        }
        let mut models = Vec::new();
        for m in &settings.models {
            let Some((kind, client)) = clients.get(m.provider.as_str()) else {
                return Err(LlmError::Config(format!(
                    "model `{}` names no provider `{}`",
                    m.name, m.provider
                )));
            };
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
                client: client.clone(),
            });
        }
        let default = if settings.models.iter().any(|m| m.name == llm.model) {
            llm.model.clone()
        } else {
            models.first().map(|m| m.name.clone()).unwrap_or_default()
        };
        Ok(Self::new(models, default))
    }

    /// `llm.models` served by one client (the `[llm]` settings, or a test's scripted model).
    pub fn single(client: Arc<dyn LlmProvider>, llm: &LlmSettings) -> Self {
        let models = llm
            .models
            .iter()
            .map(|name| CatalogueModel {
                name: name.clone(),
                provider: "default".to_owned(),
                kind: llm.provider,
                upstream_model: name.clone(),
                context_window: llm.context_window_tokens,
                max_output: llm.max_output_tokens,
                prices: Vec::new(),
                fallbacks: Vec::new(),
                client: client.clone(),
            })
            .collect();
        Self::new(models, llm.model.clone())
    }

    fn new(models: Vec<CatalogueModel>, default: String) -> Self {
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
        }
    }

    /// The model named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<CatalogueModel>> {
        self.by_name.get(name).map(|&i| &self.models[i])
    }

    /// The model `request` names, and the request as its provider reads it (the upstream
    /// id; the output cap within the model's).
    pub fn route(
        &self,
        mut request: super::ChatRequest,
    ) -> Result<(Arc<CatalogueModel>, super::ChatRequest), LlmError> {
        let Some(model) = self.get(&request.model) else {
            return Err(LlmError::Config(format!(
                "the model `{}` is no longer offered",
                super::truncate_chars(&request.model, 64)
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

    /// The provider entries serving the models, each once.
    pub fn provider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for m in &self.models {
            if !names.contains(&m.provider.as_str()) {
                names.push(&m.provider);
            }
        }
        names
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
        let client = provider::from_settings(&llm, http::RetryHook::default());
        assert!(client.is_ok());
        let Ok(client) = client else { return };
        let c = Catalogue::single(client, &llm);
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
