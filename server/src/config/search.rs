//! `[search]` and `[[search_providers]]`: web search as a governed tool (DESIGN §17). The
//! file's providers are read-only in the admin API; the API adds its own, stored in the
//! database. Keys are secrets (shown hidden).

use rust_decimal::Decimal;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::serde_util::secret;
use super::ConfigError;

/// The wire formats a provider may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    /// A self-hosted SearXNG instance (`/search?format=json`).
    Searxng,
    /// Brave Search API (`/res/v1/web/search`, `X-Subscription-Token`).
    Brave,
    /// Tavily (`POST /search`, bearer key).
    Tavily,
}

impl SearchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchKind::Searxng => "searxng",
            SearchKind::Brave => "brave",
            SearchKind::Tavily => "tavily",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "searxng" => Some(SearchKind::Searxng),
            "brave" => Some(SearchKind::Brave),
            "tavily" => Some(SearchKind::Tavily),
            _ => None,
        }
    }

    /// The vendor's endpoint when `base_url` is left empty (SearXNG is always self-hosted).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            SearchKind::Searxng => None,
            SearchKind::Brave => Some("https://api.search.brave.com"),
            SearchKind::Tavily => Some("https://api.tavily.com"),
        }
    }
}

/// One `[[search_providers]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchProviderConfig {
    /// How roles and the audit name it (`^[a-z0-9][a-z0-9_-]{0,31}$`).
    pub name: String,
    pub kind: SearchKind,
    /// Empty: the vendor's (Brave, Tavily); required for SearXNG.
    #[serde(default, serialize_with = "crate::domain::shown_url::serialize_shown")]
    pub base_url: String,
    #[serde(default, with = "secret")]
    pub api_key: Option<SecretString>,
    /// What one query costs, an exact decimal string (`"0.005"`); unset: free.
    #[serde(default, deserialize_with = "super::catalogue::exact_opt")]
    pub price_per_query: Option<Decimal>,
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_currency() -> String {
    "USD".to_owned()
}

fn default_timeout() -> u64 {
    10
}

/// `[search]` in the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    /// Remove e-mail addresses and runs of 12 or more digits from queries before they leave.
    pub strip_personal_data: bool,
    /// Most queries one user sends per day, unless their role says otherwise.
    pub queries_per_user_per_day: u32,
    /// Largest answer body read from a provider; a larger one is an error.
    pub max_response_bytes: usize,
    /// Failures in a row that open a provider's breaker.
    pub breaker_failures: u32,
    /// How long an open breaker skips its provider before one call tries it again.
    pub breaker_cooldown_secs: u64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            strip_personal_data: true,
            queries_per_user_per_day: 200,
            max_response_bytes: 2 * 1024 * 1024,
            breaker_failures: 3,
            breaker_cooldown_secs: 60,
        }
    }
}

/// Whether `name` may name a search provider.
pub fn valid_provider_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 32
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// What is wrong with one provider entry (shared by the file and the admin API).
pub fn check_provider(p: &SearchProviderConfig) -> Result<(), String> {
    if !valid_provider_name(&p.name) {
        return Err(format!(
            "`{}`: names are 1 to 32 of a-z, 0-9, `_`, `-`, starting with a letter or digit",
            crate::tools::truncate_chars(&p.name, 40)
        ));
    }
    let base = if p.base_url.trim().is_empty() {
        match p.kind.default_base_url() {
            Some(u) => u.to_owned(),
            None => return Err(format!("`{}`: a SearXNG provider needs base_url", p.name)),
        }
    } else {
        p.base_url.trim().to_owned()
    };
    match url::Url::parse(&base) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => return Err(format!("`{}`: base_url must be an http(s) URL", p.name)),
    }
    if p.kind != SearchKind::Searxng && p.api_key.is_none() {
        return Err(format!(
            "`{}`: a {} provider needs api_key",
            p.name,
            p.kind.as_str()
        ));
    }
    if p.price_per_query
        .is_some_and(|d| d < Decimal::ZERO || d.scale() > 9)
    {
        return Err(format!(
            "`{}`: price_per_query must be a non-negative amount with at most 9 decimals",
            p.name
        ));
    }
    let currency_ok = p.currency.len() == 3 && p.currency.chars().all(|c| c.is_ascii_uppercase());
    if !currency_ok {
        return Err(format!(
            "`{}`: currency must be an ISO 4217 code like USD",
            p.name
        ));
    }
    if !(1..=120).contains(&p.timeout_secs) {
        return Err(format!("`{}`: timeout_secs must be 1..=120", p.name));
    }
    Ok(())
}

impl SearchSettings {
    pub(super) fn validate(&self, providers: &[SearchProviderConfig]) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| Err(ConfigError::invalid(key, reason));
        if !(1_024..=64 * 1024 * 1024).contains(&self.max_response_bytes) {
            return bad("search.max_response_bytes", "must be 1024..=67108864");
        }
        if !(1..=100).contains(&self.breaker_failures) {
            return bad("search.breaker_failures", "must be 1..=100");
        }
        if !(1..=86_400).contains(&self.breaker_cooldown_secs) {
            return bad("search.breaker_cooldown_secs", "must be 1..=86400");
        }
        for (i, p) in providers.iter().enumerate() {
            check_provider(p).map_err(|e| ConfigError::invalid("search_providers", e))?;
            if providers[..i].iter().any(|q| q.name == p.name) {
                return Err(ConfigError::invalid(
                    "search_providers",
                    format!("`{}` is named twice", p.name),
                ));
            }
        }
        Ok(())
    }
}
