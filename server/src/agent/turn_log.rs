//! The events of a turn running in this process, kept so that clients can (re-)attach and
//! follow it token by token, and the event ids that every process agrees on.
//!
//! An id names a place in the turn, not a count of events sent, so that a process that only
//! has the turn's committed steps (one text per step, from Postgres) can give the same ids as
//! the process that streamed it delta by delta:
//! - `0` is `turn_start`;
//! - `{step}.{pos}` is an event of model call `step` (1, 2, …): a text delta ending at byte
//!   `pos` of the step's text (as stored), then `usage` at `L+1`, the `n` tool calls at
//!   `L+2…` and their results at `L+2+n…` (`L` the text's length);
//! - `end` is the final `done` or `error`.
//!
//! Memory stays bounded: a step is dropped once it is committed (a follower behind it reads
//! it from Postgres), so the log holds at most the step being produced.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::events::TurnEvent;

/// Where an event sits in its turn (see the module doc). Ordered as the turn goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventId {
    Start,
    At { step: u32, pos: u64 },
    End,
}

/// Longest id accepted from a client.
pub const MAX_ID_LEN: usize = 32;

impl EventId {
    /// Parses an id this server gave (`None` for anything else).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.len() > MAX_ID_LEN {
            return None;
        }
        match s {
            "0" => Some(Self::Start),
            "end" => Some(Self::End),
            _ => {
                let (step, pos) = s.split_once('.')?;
                let all_digits = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
                if !all_digits(step) || !all_digits(pos) {
                    return None;
                }
                let step: u32 = step.parse().ok()?;
                (step > 0).then_some(Self::At {
                    step,
                    pos: pos.parse().ok()?,
                })
            }
        }
    }

    /// The SSE `id:` text.
    pub fn to_sse(self) -> String {
        match self {
            Self::Start => "0".to_owned(),
            Self::At { step, pos } => format!("{step}.{pos}"),
            Self::End => "end".to_owned(),
        }
    }

    /// The step the id falls in (0 for `turn_start`).
    pub fn step(self) -> u32 {
        match self {
            Self::Start => 0,
            Self::At { step, .. } => step,
            Self::End => u32::MAX,
        }
    }
}

/// Where the events of a step with `text_len` bytes of text and `calls` tool calls sit.
pub fn usage_pos(text_len: u64) -> u64 {
    text_len + 1
}
pub fn call_pos(text_len: u64, i: u64) -> u64 {
    text_len + 2 + i
}
pub fn result_pos(text_len: u64, calls: u64, i: u64) -> u64 {
    text_len + 2 + calls + i
}

/// One model call's events while it is not committed.
#[derive(Default)]
struct Step {
    number: u32,
    /// The text so far, as it is stored (NUL made safe for Postgres).
    text: String,
    /// Where each delta ended in `text`, so that followers get the deltas as they came.
    ends: Vec<u64>,
    /// Usage, tool calls and results with their positions.
    tail: Vec<(u64, TurnEvent)>,
    calls: u64,
    results: u64,
    /// Usage seen: the text is over.
    usage: bool,
}

#[derive(Default)]
struct State {
    start: Option<TurnEvent>,
    steps: VecDeque<Step>,
    /// The current step's number.
    step: u32,
    /// Steps up to this one are committed and dropped from memory.
    committed: u32,
    end: Option<TurnEvent>,
}

/// What a follower finds after its position.
pub enum Read {
    /// The next events, in order (empty: nothing yet).
    Events(Vec<(EventId, TurnEvent)>),
    /// The follower is inside steps already dropped: read them from Postgres first.
    Behind,
}

/// A running turn's events; the turn writes, any number of followers read.
pub struct TurnLog {
    pub turn_id: uuid::Uuid,
    state: Mutex<State>,
    version: watch::Sender<u64>,
    /// A follower on another process asked to be told when a step commits or the turn ends.
    remote: AtomicBool,
}

/// How the turn's loop sends its events.
pub type EventSink = Arc<TurnLog>;

impl TurnLog {
    pub fn new(turn_id: uuid::Uuid) -> EventSink {
        Arc::new(Self {
            turn_id,
            state: Mutex::default(),
            version: watch::Sender::new(0),
            remote: AtomicBool::new(false),
        })
    }

    /// Records an event: the loop's only way to report. Shaped like the channel send it
    /// replaced (its call sites read the same) but it never fails: the turn goes on whether
    /// or not anyone follows it.
    pub async fn send(&self, e: TurnEvent) -> Result<(), std::convert::Infallible> {
        self.push(e);
        Ok(())
    }

    /// Records an event and wakes the followers.
    pub fn push(&self, e: TurnEvent) {
        if let Ok(mut s) = self.state.lock() {
            s.push(e);
        }
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A model call begins: its events form step `number`.
    pub fn begin_step(&self, number: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.step = number;
            s.steps.push_back(Step {
                number,
                ..Step::default()
            });
        }
    }

    /// Every step so far is committed: memory keeps none of them.
    pub fn committed(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.committed = s.step;
            s.steps.clear();
        }
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    pub fn ended(&self) -> bool {
        self.state.lock().map(|s| s.end.is_some()).unwrap_or(true)
    }

    /// Marks the turn as followed from another process; true the first time.
    pub fn followed_remotely(&self) -> bool {
        !self.remote.swap(true, Ordering::Relaxed)
    }

    /// Whether another process follows the turn (and must be told of commits).
    pub fn is_followed_remotely(&self) -> bool {
        self.remote.load(Ordering::Relaxed)
    }

    /// At most `limit` events after `after` (`None`: from the beginning); `floor` is a step
    /// the reader already has whole from Postgres.
    pub fn read_after(&self, after: Option<EventId>, floor: u32, limit: usize) -> Read {
        let Ok(s) = self.state.lock() else {
            return Read::Behind;
        };
        s.read_after(after, floor, limit)
    }
}

impl State {
    fn current(&mut self) -> &mut Step {
        let number = self.step.max(1);
        if self.steps.back().is_none_or(|s| s.number != number) {
            self.steps.push_back(Step {
                number,
                ..Step::default()
            });
        }
        let last = self.steps.len() - 1;
        &mut self.steps[last]
    }

    fn push(&mut self, e: TurnEvent) {
        match e {
            TurnEvent::TurnStart { .. } => self.start = Some(e),
            TurnEvent::Done { .. } | TurnEvent::Error(_) => self.end = Some(e),
            TurnEvent::TextDelta { text } => {
                let text = crate::db::pg_safe_text(&text).into_owned();
                if text.is_empty() {
                    return;
                }
                let step = self.current();
                step.text.push_str(&text);
                step.ends.push(step.text.len() as u64);
            }
            TurnEvent::Usage { .. } => {
                let step = self.current();
                step.usage = true;
                let pos = usage_pos(step.text.len() as u64);
                step.tail.push((pos, e));
            }
            TurnEvent::ToolCall(_) => {
                let step = self.current();
                let pos = call_pos(step.text.len() as u64, step.calls);
                step.calls += 1;
                step.tail.push((pos, e));
            }
            TurnEvent::ToolResult(_) => {
                let step = self.current();
                let pos = result_pos(step.text.len() as u64, step.calls, step.results);
                step.results += 1;
                step.tail.push((pos, e));
            }
        }
    }

    fn read_after(&self, after: Option<EventId>, floor: u32, limit: usize) -> Read {
        if after == Some(EventId::End) {
            return Read::Events(Vec::new());
        }
        let from_step = after.map_or(0, EventId::step).max(floor);
        // Inside or before a dropped step that Postgres has not given the reader whole.
        if floor < self.committed && from_step <= self.committed {
            return Read::Behind;
        }
        let mut out = Vec::new();
        if after.is_none() {
            if let Some(start) = &self.start {
                out.push((EventId::Start, start.clone()));
            }
        }
        for step in self.steps.iter().filter(|s| s.number > floor) {
            let skip = match after {
                Some(EventId::At { step: n, pos }) if n == step.number => pos,
                Some(EventId::At { step: n, .. }) if n > step.number => continue,
                _ => 0,
            };
            let mut begin = 0u64;
            for &end in &step.ends {
                if end > skip {
                    let from = usize::try_from(begin.max(skip)).unwrap_or(usize::MAX);
                    let to = usize::try_from(end).unwrap_or(usize::MAX);
                    if let Some(text) = step.text.get(from..to) {
                        let text = text.to_owned();
                        out.push((
                            EventId::At {
                                step: step.number,
                                pos: end,
                            },
                            TurnEvent::TextDelta { text },
                        ));
                    }
                }
                begin = end;
            }
            for (pos, e) in step.tail.iter().filter(|(p, _)| *p > skip) {
                out.push((
                    EventId::At {
                        step: step.number,
                        pos: *pos,
                    },
                    e.clone(),
                ));
            }
            if out.len() >= limit {
                return Read::Events(out);
            }
        }
        if let Some(end) = &self.end {
            out.push((EventId::End, end.clone()));
        }
        Read::Events(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(r: Read) -> Vec<String> {
        match r {
            Read::Events(v) => v.into_iter().map(|(id, _)| id.to_sse()).collect(),
            Read::Behind => vec!["behind".into()],
        }
    }

    fn delta(t: &str) -> TurnEvent {
        TurnEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn ids_round_trip_and_order() {
        for s in ["0", "1.0", "3.57", "end"] {
            assert_eq!(EventId::parse(s).unwrap().to_sse(), s);
        }
        for bad in [
            "",
            "1",
            "0.5",
            "a.b",
            "1.",
            ".1",
            "-1.2",
            "1.2.3",
            &"9".repeat(40),
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
        assert!(EventId::Start < EventId::parse("1.0").unwrap());
        assert!(EventId::parse("1.99").unwrap() < EventId::parse("2.1").unwrap());
        assert!(EventId::parse("9.9").unwrap() < EventId::End);
    }

    #[test]
    fn a_follower_resumes_after_its_last_id_and_misses_nothing() {
        let log = TurnLog::new(uuid::Uuid::nil());
        log.push(TurnEvent::TurnStart {
            message_id: uuid::Uuid::nil(),
        });
        log.begin_step(1);
        log.push(delta("Hel"));
        log.push(delta("lo"));
        log.push(TurnEvent::Usage {
            input_tokens: 1,
            output_tokens: 2,
        });
        assert_eq!(
            ids(log.read_after(None, 0, 100)),
            ["0", "1.3", "1.5", "1.6"]
        );
        assert_eq!(
            ids(log.read_after(EventId::parse("1.3"), 0, 100)),
            ["1.5", "1.6"]
        );
        log.committed();
        // Step 1 is gone from memory: a follower inside it reads Postgres first.
        assert_eq!(
            ids(log.read_after(EventId::parse("1.3"), 0, 100)),
            ["behind"]
        );
        log.begin_step(2);
        log.push(delta("again"));
        log.push(TurnEvent::Done {
            message_id: None,
            finish_reason: super::super::FinishReason::Stop,
        });
        // Having had step 1 whole from Postgres, it continues here.
        assert_eq!(
            ids(log.read_after(EventId::parse("1.6"), 1, 100)),
            ["2.5", "end"]
        );
        assert!(ids(log.read_after(Some(EventId::End), 0, 100)).is_empty());
    }
}
