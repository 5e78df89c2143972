//! Shared HTTP plumbing for the HTTP-based adapters: client building, retries with
//! backoff (honouring `Retry-After`), the four timeouts and SSE decoding.
//!
//! Timeouts:
//! - `connect`: TCP/TLS connection establishment (set on the reqwest client);
//! - `first_byte`: from sending a request attempt until the response headers, and
//!   from the headers until the first body chunk;
//! - `idle`: between two body chunks;
//! - `total`: the whole call, retries and streaming included.

use std::time::Duration;

mod body;
mod client;
mod retry;
mod sse;
mod upstream;

pub use body::{is_json_response, read_json_body};
pub use client::{build_clients, normalize_base_url};
pub use retry::{
    error_message_from_body, error_message_from_json, parse_retry_after, send_with_retry,
};
pub use sse::{decode_sse, events_from, sse_events, SseDecoder};
pub use upstream::Upstream;

/// Maximum length (in characters) of an upstream error message kept in [`LlmError::Upstream`].
pub const MAX_ERROR_MESSAGE_CHARS: usize = 300;

/// Upper bound for one computed (exponential) backoff delay.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A `Retry-After` longer than this is not waited for: the error is returned at once.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// Largest response body accepted from the model for one call: a model message is at most
/// the output cap in tokens, so anything near this is broken or hostile, and every open
/// stream would otherwise buffer whatever one line of it holds.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Once the model's message has finished (finish reason seen) the rest of the stream (its
/// usage, `[DONE]`) is waited for this long at most: the complete reply is not thrown away
/// because an upstream never closes its stream.
pub const AFTER_FINISH_WAIT: Duration = Duration::from_secs(2);

/// Timeouts, retry policy and transport mode of an HTTP-based provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Time allowed to establish the connection.
    pub connect_timeout: Duration,
    /// Time allowed until the response headers, and then until the first body chunk.
    pub first_byte_timeout: Duration,
    /// Time allowed between two body chunks of a streamed response.
    pub idle_timeout: Duration,
    /// Time allowed for the whole call (all attempts and the whole stream).
    pub total_timeout: Duration,
    /// How many times a retryable failure is retried (0 = a single attempt).
    pub max_retries: u32,
    /// Base of the exponential backoff (`base * 2^attempt`, jittered).
    pub retry_base_delay: Duration,
    /// Use server-sent-event streaming (`true`) or a single JSON response (`false`).
    pub streaming: bool,
    /// Told about every retry (metrics); the provider layer knows nothing of Prometheus.
    pub on_retry: RetryHook,
}

/// A callback run before each retry.
#[derive(Clone, Default)]
pub struct RetryHook(Option<std::sync::Arc<dyn Fn() + Send + Sync>>);

impl RetryHook {
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Some(std::sync::Arc::new(f)))
    }

    pub(super) fn fire(&self) {
        if let Some(f) = &self.0 {
            f();
        }
    }
}

impl std::fmt::Debug for RetryHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "RetryHook(set)"
        } else {
            "RetryHook(none)"
        })
    }
}

impl PartialEq for RetryHook {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for RetryHook {}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(600),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            streaming: true,
            on_retry: RetryHook::default(),
        }
    }
}
#[cfg(test)]
mod tests {
    use super::retry::retry_delay;
    use super::*;
    use crate::llm::LlmError;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn retry_after_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(parse_retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&h), Some(Duration::ZERO));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message_from_body(r#"{"error":{"message":"bad key","type":"x"}}"#, 401),
            "bad key"
        );
        assert_eq!(error_message_from_body("", 502), "HTTP 502");
        let long = "x".repeat(1000);
        assert_eq!(
            error_message_from_body(&long, 500).chars().count(),
            MAX_ERROR_MESSAGE_CHARS + 1
        );
    }

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        let e = LlmError::Connect("x".into());
        assert!(retry_delay(&e, 0, base) <= Duration::from_millis(120));
        assert!(retry_delay(&e, 3, base) >= Duration::from_millis(640));
        let rl = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
        };
        assert_eq!(retry_delay(&rl, 0, base), Duration::from_secs(7));
    }
}
