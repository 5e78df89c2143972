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
    /// Empty: the vendor's. Shown without credentials.
    #[serde(default, serialize_with = "crate::domain::shown_url::serialize_shown")]
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
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// What the model reads: `["text"]` or `["text", "image"]`. Unset: text only, except
    /// the demo provider's models, which also take images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<InputKind>>,
    /// Largest image (bytes, as stored after normalisation) a request may give it; unset:
    /// [`DEFAULT_MAX_IMAGE_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_image_bytes: Option<u64>,
    /// Most images one request may give it; unset: [`DEFAULT_MAX_IMAGES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_images: Option<u32>,
}

/// One kind of input a model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    Text,
    Image,
}

/// 5 MiB: Anthropic's per-image ceiling, and well above a 2048-px re-encoded photo.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Images per request when a model sets none.
pub const DEFAULT_MAX_IMAGES: u32 = 20;

/// The inputs a model of `kind` reads when its entry names none: the demo model describes
/// images offline, a real provider's model is assumed to read text only until an admin says
/// otherwise (sending an image to a text model is an upstream error, after the spend).
pub fn default_input(kind: ProviderKind) -> Vec<InputKind> {
    match kind {
        ProviderKind::Demo => vec![InputKind::Text, InputKind::Image],
        _ => vec![InputKind::Text],
    }
}

/// How a price may be written: a string or an integer; a float is refused rather than rounded.
#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Text(String),
    Whole(i64),
    Float(f64),
}

impl Amount {
    fn exact<E: serde::de::Error>(self) -> Result<Decimal, E> {
        match self {
            Amount::Text(s) => s
                .trim()
                .parse::<Decimal>()
                .map_err(|e| E::custom(format!("`{s}` is not a decimal amount: {e}"))),
            Amount::Whole(n) => Ok(Decimal::from(n)),
            Amount::Float(f) => Err(E::custom(format!(
                "write prices as strings (\"{f}\") so they stay exact"
            ))),
        }
    }
}

pub(super) fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    Amount::deserialize(d)?.exact()
}

/// An optional amount; `null` is unset (as stored entries write it).
pub(super) fn exact_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
    Option::<Amount>::deserialize(d)?
        .map(Amount::exact)
        .transpose()
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
        if providers[..i].iter().any(|o| o.name == p.name) {
            return Err(ConfigError::invalid(
                "providers",
                format!("`{}` is declared twice", p.name),
            ));
        }
        check_provider(p).map_err(|e| ConfigError::invalid("providers", e))?;
    }
    for (i, m) in models.iter().enumerate() {
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(ConfigError::invalid(
                "models",
                format!("`{}`: declared twice", m.name),
            ));
        }
        let provider_exists = providers.iter().any(|p| p.name == m.provider);
        check_model(m, llm, provider_exists, &|f| {
            models.iter().any(|o| o.name == f)
        })
        .map_err(|e| ConfigError::invalid("models", e))?;
    }
    Ok(())
}

/// At most 80 characters of a name, for an error message.
fn shown(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// One provider entry on its own: its name, URL, retries and timeouts.
pub fn check_provider(p: &ProviderConfig) -> Result<(), String> {
    if !valid_name(&p.name) {
        return Err(format!(
            "`{}`: names are 1 to 64 of a-z, 0-9, `.-_:/@`",
            shown(&p.name, 80)
        ));
    }
    if p.kind != ProviderKind::Demo && !p.base_url.is_empty() {
        let url = url::Url::parse(&p.base_url);
        if !url.is_ok_and(|u| matches!(u.scheme(), "http" | "https")) || p.base_url.len() > 2048 {
            return Err(format!(
                "`{}`: base_url must be an http(s) URL of at most 2048 characters",
                p.name
            ));
        }
    }
    if p.api_key.as_ref().is_some_and(|k| {
        use secrecy::ExposeSecret;
        k.expose_secret().len() > 4096
    }) {
        return Err(format!("`{}`: api_key is longer than 4096 bytes", p.name));
    }
    if p.max_retries.is_some_and(|r| r > 10) {
        return Err(format!(
            "`{}`: max_retries must be between 0 and 10",
            p.name
        ));
    }
    let timeouts = [
        p.connect_timeout_secs,
        p.first_byte_timeout_secs,
        p.idle_timeout_secs,
        p.request_timeout_secs,
    ];
    if timeouts.iter().flatten().any(|t| *t == 0 || *t > 86_400) {
        return Err(format!(
            "`{}`: timeouts must be between 1 second and 1 day",
            p.name
        ));
    }
    Ok(())
}

/// One model entry against the providers and models it names.
pub fn check_model(
    m: &ModelConfig,
    llm: &LlmSettings,
    provider_exists: bool,
    model_exists: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let bad = |reason: String| format!("`{}`: {reason}", m.name);
    if !valid_name(&m.name) {
        return Err(format!(
            "`{}`: names are 1 to 64 of a-z, 0-9, `.-_:/@`",
            shown(&m.name, 80)
        ));
    }
    if !provider_exists {
        return Err(bad(format!(
            "no provider named `{}`",
            shown(&m.provider, 80)
        )));
    }
    if m.upstream_model.len() > 200 {
        return Err(bad("upstream_model is longer than 200 characters".into()));
    }
    let window = m.context_window.unwrap_or(llm.context_window_tokens);
    let output = u64::from(m.max_output.unwrap_or(llm.max_output_tokens));
    if window < 256 || output == 0 || output >= window || window > 100_000_000 {
        return Err(bad(format!(
            "context_window ({window}) must be between 256 and 100000000 and larger than max_output ({output})"
        )));
    }
    if m.prices.len() > 32 {
        return Err(bad("at most 32 prices".into()));
    }
    validate_prices(&m.prices).map_err(bad)?;
    if let Some(input) = &m.input {
        if !input.contains(&InputKind::Text) {
            return Err(bad("input must include `text`".into()));
        }
    }
    if m.max_image_bytes
        .is_some_and(|b| !(1024..=64 * 1024 * 1024).contains(&b))
    {
        return Err(bad(
            "max_image_bytes must be between 1024 and 67108864".into()
        ));
    }
    if m.max_images.is_some_and(|n| !(1..=100).contains(&n)) {
        return Err(bad("max_images must be between 1 and 100".into()));
    }
    if m.fallbacks.len() > 4 {
        return Err(bad("at most 4 fallbacks".into()));
    }
    for f in &m.fallbacks {
        if f == &m.name {
            return Err(bad("a model cannot be its own fallback".into()));
        }
        if !model_exists(f) {
            return Err(bad(format!(
                "fallback `{}` is not a model of the catalogue",
                shown(f, 80)
            )));
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
        if amounts.iter().flatten().any(|a| a.scale() > 9) {
            return Err("prices have at most 9 decimal places".into());
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
