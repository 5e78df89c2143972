//! Sending with retries: backoff or `Retry-After`, the first-byte timeout per attempt, the
//! total deadline, and upstream errors turned into [`LlmError`]s.

use std::time::Duration;

use rand::Rng;
use reqwest::header::HeaderMap;
use tokio::time::Instant;

use super::*;
use crate::llm::{truncate_chars, LlmError};

/// Sends a request built by `make` (called once per attempt), retrying retryable
/// failures (429, 408, 5xx, connect errors) up to `settings.max_retries` times with
/// exponential backoff or the delay given by `Retry-After`, within the total timeout.
///
/// Returns the first successful (2xx) response; its body is not read yet.
pub async fn send_with_retry<F>(
    settings: &HttpSettings,
    started: Instant,
    mut make: F,
) -> Result<reqwest::Response, LlmError>
where
    F: FnMut() -> reqwest::RequestBuilder,
{
    let total_deadline = started + settings.total_timeout;
    let mut attempt: u32 = 0;
    loop {
        let err = match send_once(settings, total_deadline, make()).await {
            Ok(resp) => return Ok(resp),
            Err(err) => err,
        };
        if !err.is_retryable() || attempt >= settings.max_retries {
            return Err(err);
        }
        let delay = retry_delay(&err, attempt, settings.retry_base_delay);
        if delay > MAX_RETRY_WAIT || Instant::now() + delay >= total_deadline {
            tracing::warn!(error = %err, delay_ms = delay.as_millis() as u64, "LLM retry would exceed the total timeout; giving up");
            return Err(err);
        }
        attempt += 1;
        settings.on_retry.fire();
        tracing::warn!(
            error = %err,
            attempt,
            max_retries = settings.max_retries,
            delay_ms = delay.as_millis() as u64,
            "retrying LLM request"
        );
        tokio::time::sleep(delay).await;
    }
}

async fn send_once(
    settings: &HttpSettings,
    total_deadline: Instant,
    builder: reqwest::RequestBuilder,
) -> Result<reqwest::Response, LlmError> {
    let (deadline, which) =
        pick_deadline(settings.first_byte_timeout, "first_byte", total_deadline);
    let resp = match tokio::time::timeout_at(deadline, builder.send()).await {
        Err(_) => return Err(LlmError::Timeout(which)),
        Ok(Err(e)) => return Err(map_send_error(&e)),
        Ok(Ok(resp)) => resp,
    };
    if resp.status().is_success() {
        return Ok(resp);
    }
    Err(error_from_response(resp, settings, total_deadline).await)
}

/// Earliest of `now + timeout` and the total deadline, with the matching timeout name.
pub(super) fn pick_deadline(
    timeout: Duration,
    name: &'static str,
    total_deadline: Instant,
) -> (Instant, &'static str) {
    let candidate = Instant::now() + timeout;
    if candidate >= total_deadline {
        (total_deadline, "total")
    } else {
        (candidate, name)
    }
}

/// Converts a non-2xx response into an [`LlmError`], reading (a bounded time) its body.
async fn error_from_response(
    resp: reqwest::Response,
    settings: &HttpSettings,
    total_deadline: Instant,
) -> LlmError {
    let status = resp.status().as_u16();
    let retry_after = parse_retry_after(resp.headers());
    let (deadline, _) = pick_deadline(settings.idle_timeout, "idle", total_deadline);
    let body = match tokio::time::timeout_at(deadline, resp.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    if status == 429 {
        tracing::debug!(body = %truncate_chars(&body, MAX_ERROR_MESSAGE_CHARS), "upstream rate limited");
        return LlmError::RateLimited { retry_after };
    }
    LlmError::Upstream {
        status,
        message: error_message_from_body(&body, status),
    }
}

/// Extracts a human readable message from an error body (`{"error":{"message":..}}`,
/// `{"error":".."}`, `{"message":..}` or raw text), truncated.
pub fn error_message_from_body(body: &str, status: u16) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| error_message_from_json(&v));
    let msg = match from_json {
        Some(m) => m,
        None if body.trim().is_empty() => format!("HTTP {status}"),
        None => body.trim().to_string(),
    };
    truncate_chars(&msg, MAX_ERROR_MESSAGE_CHARS)
}

/// The message of a JSON error object, if it looks like one.
pub fn error_message_from_json(v: &serde_json::Value) -> Option<String> {
    match v.get("error") {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(e @ serde_json::Value::Object(_)) => e
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .or_else(|| Some(e.to_string())),
        _ => v
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string),
    }
}

/// Parses `retry-after-ms` (milliseconds), then `Retry-After` (seconds or HTTP date).
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// Delay before retry number `attempt + 1`.
pub(super) fn retry_delay(err: &LlmError, attempt: u32, base: Duration) -> Duration {
    if let LlmError::RateLimited {
        retry_after: Some(d),
    } = err
    {
        return *d;
    }
    let factor = 2u32.saturating_pow(attempt.min(16));
    let backoff = base.saturating_mul(factor).min(MAX_BACKOFF);
    let jitter: f64 = rand::thread_rng().gen_range(0.8..1.2);
    backoff.mul_f64(jitter)
}

/// Maps an error of `RequestBuilder::send` to an [`LlmError`].
pub(super) fn map_send_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        if e.is_connect() {
            LlmError::Timeout("connect")
        } else {
            LlmError::Timeout("first_byte")
        }
    } else if e.is_builder() {
        LlmError::Config(error_chain(e))
    } else {
        LlmError::Connect(error_chain(e))
    }
}

/// An error's message followed by its sources, with the credentials of any URL they name
/// cut out (reqwest's errors name the URL, `user:password@` included).
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    crate::domain::scrub_urls(&out)
}
