//! `[llm]`: the model and the agent loop.

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::serde_util::{millis, secret, secs, string_list};
use super::ConfigError;

/// The system prompt when none is configured.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are AgentChat, a helpful assistant for a team. \
You can call tools that run on the server; use them when they help, and answer concisely. \
When a tool returns an error, read it and correct your call or explain the problem.";

/// Which upstream speaks for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, DeepSeek, ...).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// The built-in offline demo model.
    Demo,
}

impl ProviderKind {
    /// The vendor's base URL.
    pub fn vendor_base_url(self) -> &'static str {
        self.vendor_defaults().0
    }

    /// The vendor's base URL and default model.
    fn vendor_defaults(self) -> (&'static str, &'static str) {
        match self {
            Self::Openai => ("https://api.openai.com/v1", "gpt-4o-mini"),
            Self::Anthropic => ("https://api.anthropic.com", "claude-sonnet-4-5"),
            Self::Demo => ("", "demo"),
        }
    }
}

/// When a provider's circuit breaker opens and how long it stays open
/// ([`crate::catalogue::breaker`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSettings {
    /// Consecutive failures that open it.
    pub failures: u32,
    /// Share of failed calls in the window (0–1) that opens it, once `min_calls` were made.
    pub failure_rate: f64,
    pub min_calls: u32,
    /// Distinct callers among the failures that open it.
    pub min_users: u32,
    /// How far back the failure rate looks.
    pub window: Duration,
    /// How long it stays open before one probe call may try.
    pub cooldown: Duration,
}

/// The model and the agent loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default = "LlmSettings::unfilled", deny_unknown_fields)]
pub struct LlmSettings {
    pub provider: ProviderKind,
    /// `https://api.openai.com/v1` style for OpenAI, `https://api.anthropic.com` for
    /// Anthropic; empty: the vendor's. Shown without credentials.
    #[serde(serialize_with = "crate::domain::shown_url::serialize_shown")]
    pub base_url: String,
    #[serde(with = "secret")]
    pub api_key: Option<SecretString>,
    /// The default model; empty: the vendor's.
    pub model: String,
    /// Models a conversation may pick (always includes `model` once loaded).
    #[serde(deserialize_with = "string_list")]
    pub models: Vec<String>,
    pub system_prompt: String,
    /// Model calls per turn before the turn stops with `max_iterations`.
    pub max_iterations: u32,
    /// Output cap per model call.
    pub max_output_tokens: u32,
    /// The model's context window; history is trimmed to fit.
    pub context_window_tokens: u64,
    /// Tool results larger than this are truncated with a note.
    pub tool_output_cap_bytes: usize,
    /// Most messages one conversation may hold (questions, answers and tool results); a
    /// message to a full one is refused (409 `conversation_full`): start a new chat.
    pub max_conversation_messages: u32,
    /// Ask the upstream to stream (`false` for endpoints that cannot).
    pub streaming: bool,
    #[serde(rename = "connect_timeout_secs", with = "secs")]
    pub connect_timeout: Duration,
    #[serde(rename = "first_byte_timeout_secs", with = "secs")]
    pub first_byte_timeout: Duration,
    #[serde(rename = "idle_timeout_secs", with = "secs")]
    pub idle_timeout: Duration,
    /// Bound on one model call.
    #[serde(rename = "request_timeout_secs", with = "secs")]
    pub request_timeout: Duration,
    /// Bound on a whole turn; a claim older than this is considered abandoned.
    #[serde(rename = "turn_timeout_secs", with = "secs")]
    pub turn_timeout: Duration,
    pub max_retries: u32,
    #[serde(rename = "retry_base_delay_ms", with = "millis")]
    pub retry_base_delay: Duration,
    /// The demo model waits this long before each word it streams, so that streaming and
    /// Stop can be tried offline (0: answers at once).
    #[serde(rename = "demo_delay_ms", with = "millis")]
    pub demo_delay: Duration,
    /// Record prompts, tool arguments and results in spans (off unless explicitly enabled).
    pub capture_content: bool,
    /// Title new conversations with one short model call after their first answer (charged
    /// to the user's budget); off: they keep the first words of their first message.
    pub auto_titles: bool,
    /// A provider's breaker stays open this long before one probe call may try.
    #[serde(rename = "breaker_cooldown_secs", with = "secs")]
    pub breaker_cooldown: Duration,
    /// Share of failed calls in the last minute that opens a provider's breaker.
    pub breaker_failure_rate_percent: u32,
    /// Consecutive failures that open a provider's breaker.
    pub breaker_failures: u32,
    /// Calls in the last minute before the failure rate counts.
    pub breaker_min_calls: u32,
    /// Distinct users whose calls must have failed before a provider's breaker opens: one
    /// member's slow or oversized prompts alone cannot shut the provider for everyone.
    pub breaker_min_users: u32,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self::defaults_for(ProviderKind::Demo)
    }
}

impl LlmSettings {
    /// When providers' circuit breakers open and for how long.
    pub fn breaker(&self) -> BreakerSettings {
        BreakerSettings {
            failures: self.breaker_failures,
            failure_rate: f64::from(self.breaker_failure_rate_percent) / 100.0,
            min_calls: self.breaker_min_calls,
            min_users: self.breaker_min_users,
            window: Duration::from_secs(60),
            cooldown: self.breaker_cooldown,
        }
    }

    /// The defaults with `provider`'s base URL and model filled in.
    pub fn defaults_for(provider: ProviderKind) -> Self {
        let mut l = Self {
            provider,
            ..Self::unfilled()
        };
        l.fill_vendor_defaults();
        l
    }

    /// The defaults with base URL and model left to the provider (filled once loaded).
    fn unfilled() -> Self {
        Self {
            provider: ProviderKind::Demo,
            base_url: String::new(),
            api_key: None,
            model: String::new(),
            models: Vec::new(),
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            max_iterations: 8,
            max_output_tokens: 1024,
            context_window_tokens: 32_768,
            tool_output_cap_bytes: 16 * 1024,
            max_conversation_messages: 5_000,
            streaming: true,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(300),
            turn_timeout: Duration::from_secs(600),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            demo_delay: Duration::ZERO,
            capture_content: false,
            auto_titles: true,
            breaker_cooldown: Duration::from_secs(30),
            breaker_failure_rate_percent: 50,
            breaker_failures: 5,
            breaker_min_calls: 10,
            breaker_min_users: 2,
        }
    }

    /// Empty base URL and model become the provider's; the default model heads `models`,
    /// which keeps each model once.
    pub(super) fn fill_vendor_defaults(&mut self) {
        let (base_url, model) = self.provider.vendor_defaults();
        self.base_url = self.base_url.trim().trim_end_matches('/').to_owned();
        if self.base_url.is_empty() {
            self.base_url = base_url.to_owned();
        }
        self.model = self.model.trim().to_owned();
        if self.model.is_empty() {
            self.model = model.to_owned();
        }
        let listed = std::mem::take(&mut self.models);
        self.models =
            std::iter::once(self.model.clone())
                .chain(listed)
                .fold(Vec::new(), |mut acc, m| {
                    if !acc.contains(&m) {
                        acc.push(m);
                    }
                    acc
                });
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.provider != ProviderKind::Demo && url::Url::parse(&self.base_url).is_err() {
            return Err(ConfigError::invalid(
                "llm.base_url",
                format!(
                    "`{}` is not a valid URL",
                    crate::domain::shown_url(&self.base_url)
                ),
            ));
        }
        let ranges: [(&str, u64, u64, u64); 13] = [
            (
                "llm.breaker_cooldown_secs",
                self.breaker_cooldown.as_secs(),
                1,
                3_600,
            ),
            (
                "llm.breaker_failure_rate_percent",
                self.breaker_failure_rate_percent.into(),
                1,
                100,
            ),
            (
                "llm.breaker_failures",
                self.breaker_failures.into(),
                1,
                1_000,
            ),
            (
                "llm.breaker_min_calls",
                self.breaker_min_calls.into(),
                1,
                10_000,
            ),
            (
                "llm.breaker_min_users",
                self.breaker_min_users.into(),
                1,
                1_000,
            ),
            ("llm.max_iterations", self.max_iterations.into(), 1, 100),
            (
                "llm.max_output_tokens",
                self.max_output_tokens.into(),
                1,
                u64::MAX,
            ),
            (
                "llm.context_window_tokens",
                self.context_window_tokens,
                256,
                u64::MAX,
            ),
            (
                "llm.tool_output_cap_bytes",
                self.tool_output_cap_bytes as u64,
                256,
                u64::MAX,
            ),
            (
                "llm.max_conversation_messages",
                self.max_conversation_messages.into(),
                2,
                1_000_000,
            ),
            ("llm.max_retries", self.max_retries.into(), 0, 10),
            (
                "llm.demo_delay_ms",
                u64::try_from(self.demo_delay.as_millis()).unwrap_or(u64::MAX),
                0,
                5_000,
            ),
            (
                "llm.request_timeout_secs",
                self.request_timeout.as_secs(),
                1,
                u64::MAX,
            ),
        ];
        for (key, value, min, max) in ranges {
            if value < min || value > max {
                let range = if max == u64::MAX {
                    format!("at least {min}")
                } else {
                    format!("between {min} and {max}")
                };
                return Err(ConfigError::invalid(
                    key,
                    format!("{value}: must be {range}"),
                ));
            }
        }
        Ok(())
    }
}
