//! `[[providers]]` and `[[models]]`: the model catalogue as the file (or the environment, as
//! JSON) declares it. Without them the `[llm]` provider and its `llm.models` are a one-entry
//! catalogue ([`super::Settings::catalogue_entries`]).

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use secrecy::SecretString;
use serde::{Deserialize, Deserializer, Serialize};

use super::serde_util::secret;
use super::{ConfigError, LlmSettings, ProviderKind};

/// One upstream endpoint several models may share.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// How models name it (`provider = "..."`).
    pub name: String,
    pub kind: ProviderKind,
    /// Empty: the vendor's.
    #[serde(default)]
    pub base_url: String,
    #[serde(default, with = "secret")]
    pub api_key: Option<SecretString>,
    /// Unset: `[llm]`'s.
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    #[serde(default)]
    pub first_byte_timeout_secs: Option<u64>,
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    #[serde(default)]
    pub request_timeout_secs: Option<u64>,
    #[serde(default)]
    pub max_retries: Option<u32>,
}

/// A price per million tokens, from `effective_from` on. Amounts are exact decimals written
/// as strings (`"0.15"`): a float would turn 0.1 into 0.1000000000000000055.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    /// ISO 4217 code, e.g. `USD`.
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(deserialize_with = "exact")]
    #[schema(value_type = String)]
    pub input: Decimal,
    #[serde(deserialize_with = "exact")]
    #[schema(value_type = String)]
    pub output: Decimal,
    /// Unset: the input price.
    #[serde(default, deserialize_with = "exact_opt")]
    #[schema(value_type = Option<String>)]
    pub cache_read: Option<Decimal>,
    /// Unset: the input price.
    #[serde(default, deserialize_with = "exact_opt")]
    #[schema(value_type = Option<String>)]
    pub cache_write: Option<Decimal>,
    /// Unset: always.
    #[serde(default)]
    pub effective_from: Option<DateTime<Utc>>,
}

fn default_currency() -> String {
    "USD".to_owned()
}

/// One model users may pick, by its public name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    /// The `[[providers]]` entry that serves it.
    pub provider: String,
    /// The provider's id of the model; empty: `name`.
    #[serde(default)]
    pub upstream_model: String,
    /// Unset: `llm.context_window_tokens`.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Output cap per call; unset: `llm.max_output_tokens`.
    #[serde(default)]
    pub max_output: Option<u32>,
    /// Price table; empty: unpriced (never usable under a money budget).
    #[serde(default)]
    pub prices: Vec<PriceConfig>,
    /// Models that answer, in order, when this one fails before its first token.
    #[serde(default)]
    pub fallbacks: Vec<String>,
}

/// A decimal from a string or an integer; a float is refused rather than rounded.
fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Text(String),
        Whole(i64),
        Float(f64),
    }
    match Form::deserialize(d)? {
        Form::Text(s) => s
            .trim()
            .parse::<Decimal>()
            .map_err(|e| serde::de::Error::custom(format!("`{s}` is not a decimal amount: {e}"))),
        Form::Whole(n) => Ok(Decimal::from(n)),
        Form::Float(f) => Err(serde::de::Error::custom(format!(
            "write prices as strings (\"{f}\") so they stay exact"
        ))),
    }
}

fn exact_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
    exact(d).map(Some)
}

/// Longest public model or provider name.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `name` may name a model or provider: 1 to 64 of letters, digits and `.-_:/@`.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:/@".contains(c))
}

/// Refuses a catalogue the server must not start with: duplicate or unknown names, a model
/// whose fallback is itself or missing, prices that are negative or mix currencies.
pub(super) fn validate(
    llm: &LlmSettings,
    providers: &[ProviderConfig],
    models: &[ModelConfig],
) -> Result<(), ConfigError> {
    if providers.is_empty() && !models.is_empty() {
        return Err(ConfigError::invalid(
            "models",
            "[[models]] need [[providers]] to serve them",
        ));
    }
    if !providers.is_empty() && models.is_empty() {
        return Err(ConfigError::invalid(
            "providers",
            "[[providers]] serve nothing without [[models]]",
        ));
    }
    if !models.is_empty() && llm.models.len() > 1 {
        return Err(ConfigError::invalid(
            "llm.models",
            "lists models of the single [llm] provider; with [[models]] configured, list them there",
        ));
    }
    for (i, p) in providers.iter().enumerate() {
        if !valid_name(&p.name) {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}`: names are 1 to 64 of a-z, 0-9, `.-_:/@`", p.name),
            ));
        }
        if providers[..i].iter().any(|o| o.name == p.name) {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}` is declared twice", p.name),
            ));
        }
        if p.kind != ProviderKind::Demo
            && !p.base_url.is_empty()
            && url::Url::parse(&p.base_url).is_err()
        {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}`: base_url `{}` is not a valid URL", p.name, p.base_url),
            ));
        }
        if p.max_retries.is_some_and(|r| r > 10) {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}`: max_retries must be between 0 and 10", p.name),
            ));
        }
        let timeouts = [
            p.connect_timeout_secs,
            p.first_byte_timeout_secs,
            p.idle_timeout_secs,
            p.request_timeout_secs,
        ];
        if timeouts.contains(&Some(0)) {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}`: timeouts must be at least 1 second", p.name),
            ));
        }
    }
    for (i, m) in models.iter().enumerate() {
        let bad =
            |reason: String| ConfigError::invalid("models", format!("`{}`: {reason}", m.name));
        if !valid_name(&m.name) {
            return Err(bad("names are 1 to 64 of a-z, 0-9, `.-_:/@`".into()));
        }
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(bad("declared twice".into()));
        }
        if !providers.iter().any(|p| p.name == m.provider) {
            return Err(bad(format!(
                "no [[providers]] entry named `{}`",
                m.provider
            )));
        }
        if m.upstream_model.len() > 200 {
            return Err(bad("upstream_model is longer than 200 characters".into()));
        }
        let window = m.context_window.unwrap_or(llm.context_window_tokens);
        let output = u64::from(m.max_output.unwrap_or(llm.max_output_tokens));
        if window < 256 || output == 0 || output >= window {
            return Err(bad(format!(
                "context_window ({window}) must be at least 256 and larger than max_output ({output})"
            )));
        }
        validate_prices(&m.prices).map_err(bad)?;
        for f in &m.fallbacks {
            if f == &m.name {
                return Err(bad("a model cannot be its own fallback".into()));
            }
            if !models.iter().any(|o| &o.name == f) {
                return Err(bad(format!("fallback `{f}` is not in [[models]]")));
            }
        }
        if m.fallbacks.len() > 4 {
            return Err(bad("at most 4 fallbacks".into()));
        }
    }
    Ok(())
}

/// Prices are non-negative, in one currency, with distinct start times.
pub fn validate_prices(prices: &[PriceConfig]) -> Result<(), String> {
    for (i, p) in prices.iter().enumerate() {
        let code = p.currency.len() == 3 && p.currency.chars().all(|c| c.is_ascii_uppercase());
        if !code {
            return Err(format!(
                "currency `{}` must be a 3-letter ISO code such as USD",
                p.currency
            ));
        }
        if prices[0].currency != p.currency {
            return Err("all prices of a model are in one currency".into());
        }
        let amounts = [Some(p.input), Some(p.output), p.cache_read, p.cache_write];
        if amounts.iter().flatten().any(|a| a.is_sign_negative()) {
            return Err("prices cannot be negative".into());
        }
        if amounts
            .iter()
            .flatten()
            .any(|a| *a > Decimal::from(1_000_000))
        {
            return Err("prices above 1000000 per million tokens are not plausible".into());
        }
        if prices[..i]
            .iter()
            .any(|o| o.effective_from == p.effective_from)
        {
            return Err("two prices start at the same time".into());
        }
    }
    Ok(())
}
