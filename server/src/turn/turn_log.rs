//! The events of a turn running in this process, kept so that clients can (re-)attach and
//! follow it token by token, and the event ids that every process agrees on.
//!
//! An id names a place in the turn, not a count of events sent, so that a process that only
//! has the turn's committed steps (one text per step, from Postgres) can give the same ids as
//! the process that streamed it delta by delta:
//! - `0` is `turn_start`;
//! - `{step}.{pos}` is an event of model call `step` (1, 2, …): a text delta ending at byte
//!   `pos` of the step's text (as stored), then `usage` at `L+1`, the `n` tool calls at
//!   `L+2…`, their results at `L+2+n…` and the calls that wait for a decision
//!   (`approval_required`) at `L+2+2n…` (`L` the text's length); a turn resumed after its
//!   approvals goes on in the step that paused (the decided calls' results) and numbers its
//!   next model calls after it;
//! - `end` is the final `done` or `error`.
//!
//! Memory stays bounded: a step is dropped once the step after it is committed (a follower
//! behind it reads it from Postgres), so the log holds at most the step being produced and
//! the last committed one. Keeping that one lets the turn's own stream, which has just read
//! the step from memory, go on without reading back from Postgres what the step's commit
//! wrote: a tool step costs its one commit and nothing more.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::turn::events::TurnEvent;

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
/// After every result of the step (there are at most `calls`), so ids never collide.
pub fn approval_pos(text_len: u64, calls: u64, i: u64) -> u64 {
    text_len + 2 + 2 * calls + i
}

/// One model call's events while memory keeps them.
#[derive(Default)]
struct Step {
    number: u32,
    /// The text so far, as it is stored (NUL made safe for Postgres).
    text: String,
    /// A resumed step's stored text length (its text is in Postgres, not here).
    stored_len: u64,
    /// Where each delta ended in `text`, so that followers get the deltas as they came.
    ends: Vec<u64>,
    /// Usage, tool calls and results with their positions.
    tail: Vec<(u64, TurnEvent)>,
    calls: u64,
    results: u64,
    approvals: u64,
    /// Usage seen: the text is over.
    usage: bool,
}

#[derive(Default)]
struct State {
    start: Option<TurnEvent>,
    steps: VecDeque<Step>,
    /// The current step's number.
    step: u32,
    /// Steps up to this one are dropped from memory (a reader inside them reads Postgres).
    dropped: u32,
    /// Model calls are numbered after this step (a resumed turn's paused step).
    base: u32,
    /// A resumed step: stored in part, so a reader having it "whole" from Postgres still
    /// reads the rest of it here.
    partial: Option<u32>,
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

    /// A turn resumed after its approvals goes on in step `step` (stored with `text_len`
    /// bytes of text, `calls` calls and `results` results so far), earlier steps committed;
    /// its model calls are numbered after it.
    pub fn resume_at(&self, step: u32, text_len: u64, calls: u64, results: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.step = step;
            s.base = step;
            s.dropped = step.saturating_sub(1);
            s.partial = Some(step);
            s.steps.clear();
            s.steps.push_back(Step {
                number: step,
                stored_len: text_len,
                calls,
                results,
                usage: true,
                ..Step::default()
            });
        }
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The step a resumed turn went on in (0: not resumed, or not yet).
    pub fn resumed_step(&self) -> u32 {
        self.state.lock().map(|s| s.base).unwrap_or(0)
    }

    /// A model call begins: its events form step `number` (counted after a resumed turn's
    /// paused step).
    pub fn begin_step(&self, number: u32) {
        if let Ok(mut s) = self.state.lock() {
            let number = number.saturating_add(s.base);
            s.step = number;
            s.steps.push_back(Step {
                number,
                ..Step::default()
            });
        }
    }

    /// Every step so far is committed: memory keeps the last of them whole (not a resumed
    /// step, whose start only Postgres has) and drops the others.
    pub fn committed(&self) {
        if let Ok(mut s) = self.state.lock() {
            let last = s.step;
            let keep = s.partial != Some(last);
            s.partial = None;
            s.steps.retain(|step| keep && step.number == last);
            s.dropped = if s.steps.is_empty() {
                last
            } else {
                last.saturating_sub(1)
            };
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

impl Step {
    fn text_len(&self) -> u64 {
        self.stored_len.max(self.text.len() as u64)
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
                let pos = usage_pos(step.text_len());
                step.tail.push((pos, e));
            }
            TurnEvent::ToolCall(_) => {
                let step = self.current();
                let pos = call_pos(step.text_len(), step.calls);
                step.calls += 1;
                step.tail.push((pos, e));
            }
            TurnEvent::ToolResult(_) => {
                let step = self.current();
                let pos = result_pos(step.text_len(), step.calls, step.results);
                step.results += 1;
                step.tail.push((pos, e));
            }
            TurnEvent::ApprovalRequired(_) => {
                let step = self.current();
                let pos = approval_pos(step.text_len(), step.calls, step.approvals);
                step.approvals += 1;
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
        let partial = self.partial.is_some_and(|p| floor < p);
        if partial || (floor < self.dropped && from_step <= self.dropped) {
            return Read::Behind;
        }
        let mut out = Vec::new();
        if after.is_none() {
            if let Some(start) = &self.start {
                out.push((EventId::Start, start.clone()));
            }
        }
        let wanted = |n: u32| n > floor || self.partial == Some(n);
        for step in self.steps.iter().filter(|s| wanted(s.number)) {
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
#[path = "turn_log_tests.rs"]
mod tests;
