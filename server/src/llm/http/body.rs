//! Response bodies under the timeouts: the first-byte, idle and total deadlines and the size
//! cap; whole JSON bodies.

use std::pin::Pin;
use std::time::Duration;

use futures_util::stream::{self, Stream, StreamExt};
use tokio::time::Instant;

use super::retry::{error_chain, pick_deadline};
use super::*;
use crate::llm::{truncate_chars, LlmError};

/// Wraps a response body so that the first chunk must arrive within the first-byte
/// timeout, later chunks within the idle timeout, and everything before the total
/// deadline. A transport error mid-body ends the stream with
/// [`LlmError::StreamEndedEarly`] (or [`LlmError::Timeout`] for reqwest timeouts).
pub(super) fn timed_body<S, B>(
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
