//! Shared HTTP plumbing for the HTTP-based adapters: client building, retries with
//! backoff (honouring `Retry-After`), the four timeouts and SSE decoding.
//!
//! Timeouts:
//! - `connect`: TCP/TLS connection establishment (set on the reqwest client);
//! - `first_byte`: from sending a request attempt until the response headers, and
//!   from the headers until the first body chunk;
//! - `idle`: between two body chunks;
//! - `total`: the whole call, retries and streaming included.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use rand::Rng;
use reqwest::header::HeaderMap;
use tokio::time::Instant;

use crate::shard::{self, Sharded};

use super::{truncate_chars, EventStream, LlmError, StreamEvent};

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

    fn fire(&self) {
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

/// Idle upstream connections kept per host, over all shards (the load kit measured ~50 KiB
/// of server memory per pooled connection after 5,000 streams closed).
const IDLE_CONNECTIONS_PER_HOST: usize = 128;

/// The reqwest clients of a provider, one per thread ([`crate::shard`]): a keep-alive
/// connection is driven on the thread that opened it, which is then the only one using it.
pub fn build_clients(settings: &HttpSettings) -> Result<Sharded<reqwest::Client>, LlmError> {
    let idle = shard::split(IDLE_CONNECTIONS_PER_HOST, shard::count());
    Sharded::build(idle.len(), |i| build_client(settings, idle[i]))
}

/// One reqwest client (connect timeout, keep-alive pool of `idle_per_host`).
fn build_client(
    settings: &HttpSettings,
    idle_per_host: usize,
) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        // Enough warm connections for a burst of turns; without a cap every stream that was
        // ever open at once stays pooled (buffers and a descriptor each) for the idle timeout.
        .pool_max_idle_per_host(idle_per_host)
        .tcp_keepalive(Duration::from_secs(30))
        .user_agent(concat!("AgentChat/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {}", error_chain(&e))))
}

/// Trims trailing slashes from a base URL and checks that it parses.
pub fn normalize_base_url(base_url: &str) -> Result<String, LlmError> {
    let trimmed = base_url.trim().trim_end_matches('/').to_string();
    reqwest::Url::parse(&trimmed)
        .map_err(|e| LlmError::Config(format!("invalid base URL {trimmed:?}: {e}")))?;
    Ok(trimmed)
}

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
fn pick_deadline(
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
fn retry_delay(err: &LlmError, attempt: u32, base: Duration) -> Duration {
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
fn map_send_error(e: &reqwest::Error) -> LlmError {
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

/// An error's message followed by its sources.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Wraps a response body so that the first chunk must arrive within the first-byte
/// timeout, later chunks within the idle timeout, and everything before the total
/// deadline. A transport error mid-body ends the stream with
/// [`LlmError::StreamEndedEarly`] (or [`LlmError::Timeout`] for reqwest timeouts).
fn timed_body<S, B>(
    inner: S,
    settings: &HttpSettings,
    total_deadline: Instant,
) -> impl Stream<Item = Result<B, LlmError>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<B>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    struct State<S> {
        inner: Pin<Box<S>>,
        /// Bytes received so far (capped at [`MAX_RESPONSE_BYTES`]).
        received: usize,
        got_first: bool,
        finished: bool,
        first_byte: Duration,
        idle: Duration,
        total_deadline: Instant,
    }
    let state = State {
        inner: Box::pin(inner),
        received: 0,
        got_first: false,
        finished: false,
        first_byte: settings.first_byte_timeout,
        idle: settings.idle_timeout,
        total_deadline,
    };
    stream::unfold(state, |mut st| async move {
        if st.finished {
            return None;
        }
        let (deadline, which) = if st.got_first {
            pick_deadline(st.idle, "idle", st.total_deadline)
        } else {
            pick_deadline(st.first_byte, "first_byte", st.total_deadline)
        };
        match tokio::time::timeout_at(deadline, st.inner.next()).await {
            Err(_) => {
                st.finished = true;
                Some((Err(LlmError::Timeout(which)), st))
            }
            Ok(None) => None,
            Ok(Some(Ok(chunk))) => {
                st.got_first = true;
                st.received = st.received.saturating_add(chunk.as_ref().len());
                if st.received > MAX_RESPONSE_BYTES {
                    st.finished = true;
                    return Some((
                        Err(LlmError::Malformed(format!(
                            "the model's response is larger than {MAX_RESPONSE_BYTES} bytes"
                        ))),
                        st,
                    ));
                }
                Some((Ok(chunk), st))
            }
            Ok(Some(Err(e))) => {
                st.finished = true;
                let err = if e.is_timeout() {
                    LlmError::Timeout("idle")
                } else {
                    tracing::debug!(error = %error_chain(&e), "upstream body ended with a transport error");
                    LlmError::StreamEndedEarly
                };
                Some((Err(err), st))
            }
        }
    })
}

/// Turns a streaming response into a stream of parsed server-sent events, with the
/// first-byte, idle and total timeouts applied.
pub fn sse_events(
    resp: reqwest::Response,
    settings: &HttpSettings,
    started: Instant,
) -> BoxStream<'static, Result<Event, LlmError>> {
    let total_deadline = started + settings.total_timeout;
    timed_body(resp.bytes_stream(), settings, total_deadline)
        .eventsource()
        .map(|item| {
            item.map_err(|e| match e {
                EventStreamError::Transport(err) => err,
                EventStreamError::Utf8(err) => {
                    LlmError::Malformed(format!("stream is not valid UTF-8: {err}"))
                }
                EventStreamError::Parser(err) => {
                    LlmError::Malformed(format!("invalid server-sent event: {err}"))
                }
            })
        })
        .boxed()
}

/// Reads a whole (non-streamed) JSON response body, with the timeouts applied.
pub async fn read_json_body(
    resp: reqwest::Response,
    settings: &HttpSettings,
    started: Instant,
) -> Result<serde_json::Value, LlmError> {
    let total_deadline = started + settings.total_timeout;
    let mut body = timed_body(resp.bytes_stream(), settings, total_deadline).boxed();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        buf.extend_from_slice(chunk.as_ref());
    }
    serde_json::from_slice(&buf).map_err(|e| {
        LlmError::Malformed(format!(
            "response is not valid JSON ({e}): {}",
            truncate_chars(&String::from_utf8_lossy(&buf), 200)
        ))
    })
}

/// Whether the response declares a JSON body (some servers ignore `stream: true`).
pub fn is_json_response(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"))
}

/// A provider-specific decoder of server-sent events into [`StreamEvent`]s.
pub trait SseDecoder: Send + 'static {
    /// Handles one event, pushing zero or more stream events to `out`. Returns
    /// `Ok(true)` when the message is complete (a `Completed` event was pushed
    /// last) and the rest of the stream must be ignored.
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, LlmError>;

    /// Handles the end of the body (EOF). Must return
    /// [`LlmError::StreamEndedEarly`] unless the message can be completed, in
    /// which case it pushes the `Completed` event.
    fn on_eof(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError>;

    /// True once the message has finished and only trailing events are still expected: the
    /// stream then gets [`AFTER_FINISH_WAIT`] before it counts as ended.
    fn finished_message(&self) -> bool {
        false
    }
}

/// Drives `decoder` over `events`, producing the public [`EventStream`]. After an
/// error or the completion nothing more is yielded.
pub fn decode_sse<D: SseDecoder>(
    events: BoxStream<'static, Result<Event, LlmError>>,
    decoder: D,
) -> EventStream {
    struct State<D> {
        events: BoxStream<'static, Result<Event, LlmError>>,
        decoder: D,
        queue: VecDeque<StreamEvent>,
        error: Option<LlmError>,
        finished: bool,
    }
    let state = State {
        events,
        decoder,
        queue: VecDeque::new(),
        error: None,
        finished: false,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.queue.pop_front() {
                return Some((Ok(ev), st));
            }
            if let Some(err) = st.error.take() {
                return Some((Err(err), st));
            }
            if st.finished {
                return None;
            }
            let next = if st.decoder.finished_message() {
                tokio::time::timeout(AFTER_FINISH_WAIT, st.events.next())
                    .await
                    .unwrap_or(None)
            } else {
                st.events.next().await
            };
            match next {
                Some(Ok(event)) => match st.decoder.on_event(&event, &mut st.queue) {
                    Ok(done) => st.finished = done,
                    Err(err) => {
                        st.finished = true;
                        st.error = Some(err);
                    }
                },
                Some(Err(err)) => {
                    st.finished = true;
                    st.error = Some(err);
                }
                None => {
                    st.finished = true;
                    if let Err(err) = st.decoder.on_eof(&mut st.queue) {
                        st.error = Some(err);
                    }
                }
            }
        }
    })
    .boxed()
}

/// A ready-made stream of already known events (non-streaming responses, demo).
pub fn events_from(events: Vec<StreamEvent>) -> EventStream {
    stream::iter(events.into_iter().map(Ok)).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
