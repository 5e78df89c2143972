//! What can go wrong talking to a model provider, with the stable codes clients and metrics see.

use std::time::Duration;

/// Errors from talking to a model provider.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429 (or a provider rate-limit error).
    #[error("upstream rate limited{}", .retry_after.map(|d| format!(" (retry after {}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// The delay the provider asked for, if any.
        retry_after: Option<Duration>,
    },
    /// The provider answered with an error status or an in-stream error.
    #[error("upstream error {status}: {message}")]
    Upstream {
        /// HTTP status (or the closest equivalent for in-stream errors).
        status: u16,
        /// Provider message, truncated.
        message: String,
    },
    /// A timeout elapsed; the payload says which: `connect`, `first_byte`, `idle` or `total`.
    #[error("upstream timeout ({0})")]
    Timeout(&'static str),
    /// The provider could not be reached.
    #[error("upstream unreachable: {0}")]
    Connect(String),
    /// The provider's response could not be understood.
    #[error("malformed upstream response: {0}")]
    Malformed(String),
    /// The stream ended before the provider signalled completion.
    #[error("upstream stream ended before the message was complete")]
    StreamEndedEarly,
    /// The provider's circuit breaker is open (it failed repeatedly) and no fallback could
    /// answer; the payload names the provider.
    #[error("provider `{0}` is unavailable (its circuit breaker is open)")]
    CircuitOpen(String),
    /// The provider is misconfigured (bad base URL, unbuildable client, ...).
    #[error("LLM provider misconfigured: {0}")]
    Config(String),
}

impl LlmError {
    /// Stable snake_case code for clients and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "upstream_rate_limited",
            LlmError::Upstream { .. } => "upstream_error",
            LlmError::Timeout(_) => "upstream_timeout",
            LlmError::Connect(_) => "upstream_unreachable",
            LlmError::Malformed(_) => "upstream_malformed",
            LlmError::StreamEndedEarly => "upstream_incomplete",
            LlmError::CircuitOpen(_) => "upstream_unavailable",
            LlmError::Config(_) => "upstream_misconfigured",
        }
    }

    /// Whether repeating the same request may succeed (429, 408, 5xx, connect failures).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { .. } => true,
            LlmError::Upstream { status, .. } => *status == 408 || *status >= 500,
            LlmError::Timeout(which) => *which == "connect",
            LlmError::Connect(_) => true,
            LlmError::Malformed(_)
            | LlmError::StreamEndedEarly
            | LlmError::CircuitOpen(_)
            | LlmError::Config(_) => false,
        }
    }
}
