//! The `text/event-stream` response both chat routes send, with a keep-alive comment after
//! each `period` of the stream's life (proxies drop silent connections; a client that went
//! away is noticed when one cannot be written).
//!
//! actix-web-lab's own keep-alive ticks immediately, so every stream began with a comment
//! nobody needed: one more write for the server and one more wake-up for the client per
//! turn. Here the first comes a whole period after the headers.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, Responder};
use actix_web_lab::sse;
use futures_util::Stream;
use tokio::time::{Interval, MissedTickBehavior};

/// Sends `events` as server-sent events, with keep-alive comments every `period`.
pub fn respond<S>(req: &HttpRequest, events: S, period: Duration) -> HttpResponse
where
    S: Stream<Item = sse::Event> + 'static,
{
    let events = KeepAlive::new(Box::pin(events), period);
    sse::Sse::from_stream(events)
        .customize()
        .insert_header(("X-Accel-Buffering", "no"))
        .respond_to(req)
        .map_into_boxed_body()
}

/// `inner`'s events, and a comment whenever the timer comes round; ends with `inner`.
struct KeepAlive<S> {
    inner: Pin<Box<S>>,
    timer: Interval,
}

impl<S> KeepAlive<S> {
    fn new(inner: Pin<Box<S>>, period: Duration) -> Self {
        let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self { inner, timer }
    }
}

impl<S: Stream<Item = sse::Event>> Stream for KeepAlive<S> {
    type Item = Result<sse::Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Poll::Ready(event) = self.inner.as_mut().poll_next(cx) {
            return Poll::Ready(event.map(Ok));
        }
        if self.timer.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(sse::Event::Comment("keep-alive".into()))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn data(text: &str) -> sse::Event {
        sse::Event::Data(sse::Data::new(text.to_owned()))
    }

    /// What the stream gave: "data", the comment's text, or "end".
    fn text(item: Option<Result<sse::Event, Infallible>>) -> String {
        match item {
            Some(Ok(sse::Event::Data(_))) => "data".to_owned(),
            Some(Ok(sse::Event::Comment(c))) => c.to_string(),
            None => "end".to_owned(),
        }
    }

    #[tokio::test]
    async fn the_first_comment_comes_a_period_after_the_start_and_the_stream_ends_with_its_events()
    {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<sse::Event>();
        let events =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|e| (e, rx)) },
            );
        let period = Duration::from_millis(300);
        let mut s = KeepAlive::new(Box::pin(events), period);
        assert!(tx.send(data("a")).is_ok());
        // Before any time passes: the event, not a comment.
        assert_eq!(text(s.next().await), "data");
        // A comment cannot come before the period is over, however slow the machine.
        let idle = tokio::time::timeout(period / 2, s.next()).await;
        assert!(idle.is_err(), "a comment came before the period was over");
        let comment = tokio::time::timeout(Duration::from_secs(10), s.next()).await;
        assert_eq!(comment.map(text).ok().as_deref(), Some("keep-alive"));
        drop(tx);
        assert_eq!(
            text(s.next().await),
            "end",
            "the stream outlived its events"
        );
    }
}
