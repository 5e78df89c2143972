//! Server-sent events: parsing a timed body into events and driving a provider's decoder.

use std::collections::VecDeque;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::time::Instant;

use super::body::timed_body;
use super::*;
use crate::llm::{EventStream, LlmError, StreamEvent};

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
                    Ok(done) => {
                        st.finished = done;
                        if done {
                            let rest = std::mem::replace(&mut st.events, stream::empty().boxed());
                            release_connection(rest);
                        }
                    }
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

/// Most events a finished stream is read on for: an upstream sends nothing after `[DONE]`
/// but the end of its body.
const DRAIN_EVENTS: usize = 16;
/// How long a finished stream's end is waited for in the background.
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads what is left of a finished stream (the chunked body's end, usually already on its
/// way) in the background. Dropping a body before its end closes its connection, and the
/// next call to the upstream then pays a new TCP (and TLS) handshake before its first token:
/// in the load kit 674 of 869 model calls opened a connection of their own.
fn release_connection(rest: BoxStream<'static, Result<Event, LlmError>>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let drain = rest.take(DRAIN_EVENTS).for_each(|_| async {});
        let _ = tokio::time::timeout(DRAIN_WAIT, drain).await;
    });
}

/// A ready-made stream of already known events (non-streaming responses, demo).
pub fn events_from(events: Vec<StreamEvent>) -> EventStream {
    stream::iter(events.into_iter().map(Ok)).boxed()
}
