//! The history of conversations whose turns started here, kept between turns so that the
//! next start reads only what was stored since ([`crate::db::models::message_recent::list_after`])
//! instead of every message that could fit in the model's context: a conversation of a
//! hundred messages costs its next turn the two or three rows the last turn added.
//!
//! The database stays the only truth. A conversation only grows, except when an edit removes
//! every message from one on (`message::truncate_from`); so the messages known here, up to
//! the newest one read, are still the conversation's while that newest one is still there,
//! and [`Known::extend`] checks exactly that (any replica may have added or removed
//! messages meanwhile). When it cannot answer, the start reads the history whole, as it
//! would without this cache.
//!
//! Bounded: at most [`MAX_CONVERSATIONS`] conversations and [`MAX_BYTES`] of messages; the
//! least recently used go first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::db::models::message::Message;
use crate::db::models::message_recent::{After, Recent};

/// Conversations kept at most.
pub const MAX_CONVERSATIONS: usize = 4096;
/// Bytes of messages kept at most (estimated: text, JSON strings and a fixed overhead).
pub const MAX_BYTES: usize = 64 * 1024 * 1024;

/// The history a turn's start reads: the newest messages that could fit, oldest first
/// (shared with what is kept of it here), and how many the conversation holds in all.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub messages: Arc<Vec<Message>>,
    pub total: i64,
}

/// A conversation's history as last read: the newest messages that could fit, with what
/// each costs, and where the conversation ended then.
#[derive(Debug)]
pub struct Known {
    messages: Arc<Vec<Message>>,
    costs: Vec<i64>,
    /// The conversation's newest message when read (kept or not).
    last_seq: i64,
    /// The conversation's messages then, kept or not.
    total: i64,
    bytes: usize,
}

impl Known {
    /// The history a whole read returned, and what to keep of it: nothing for a conversation
    /// with no message that fits (its newest message is then unknown).
    pub fn from_whole(recent: Recent) -> (History, Option<Known>) {
        let history = History {
            messages: Arc::new(recent.messages),
            total: recent.total,
        };
        let known = history
            .messages
            .last()
            .map(|newest| Known::new(&history, recent.costs, newest.seq));
        (history, known)
    }

    fn new(history: &History, costs: Vec<i64>, last_seq: i64) -> Self {
        Self {
            messages: history.messages.clone(),
            costs,
            last_seq,
            total: history.total,
            bytes: history.messages.iter().map(message_bytes).sum(),
        }
    }

    /// The newest message read: what [`list_after`](crate::db::models::message_recent::list_after)
    /// asks from.
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// The history as a whole read with `room` would return it now, from these messages and
    /// `after` (what was stored since), with what to keep for the next turn; `None` when these
    /// cannot tell: a message known here was removed, or everything known fits and older
    /// messages not kept here might fit too. The messages are moved, not copied, when nothing
    /// else holds them (the cache hands them out with [`HistoryCache::take`]).
    pub fn extend(self, after: After, room: u64) -> Option<(History, Known)> {
        if !after.intact {
            return None;
        }
        let added = i64::try_from(after.messages.len()).ok()?;
        let total = self.total.checked_add(added)?;
        let last_seq = after.messages.last().map_or(self.last_seq, |m| m.seq);
        let mut costs = self.costs;
        costs.extend_from_slice(&after.costs);
        let first = first_kept(&costs, room);
        let holds_the_start = i64::try_from(self.messages.len()).ok() == Some(self.total);
        if first == 0 && !holds_the_start {
            return None;
        }
        let known_len = self.messages.len();
        let mut messages =
            Arc::try_unwrap(self.messages).unwrap_or_else(|shared| (*shared).clone());
        let mut bytes = self.bytes;
        let dropped_known = first.min(known_len);
        bytes -= messages[..dropped_known]
            .iter()
            .map(message_bytes)
            .sum::<usize>();
        messages.drain(..dropped_known);
        let new = after
            .messages
            .into_iter()
            .skip(first.saturating_sub(known_len));
        for m in new {
            bytes += message_bytes(&m);
            messages.push(m);
        }
        costs.drain(..first);
        let history = History {
            messages: Arc::new(messages),
            total,
        };
        let known = Known {
            messages: history.messages.clone(),
            costs,
            last_seq,
            total,
            bytes,
        };
        Some((history, known))
    }
}

/// Where the kept suffix starts: a message stays when it and everything newer cost at most
/// `room` (the same cut as the whole read's).
fn first_kept(costs: &[i64], room: u64) -> usize {
    let room = i64::try_from(room).unwrap_or(i64::MAX);
    let mut sum: i64 = 0;
    let mut first = costs.len();
    for (i, cost) in costs.iter().enumerate().rev() {
        sum = sum.saturating_add(*cost);
        if sum > room {
            break;
        }
        first = i;
    }
    first
}

/// What a message takes here, roughly: its text, the strings of its JSON columns and a
/// fixed overhead.
fn message_bytes(m: &Message) -> usize {
    fn json(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::String(s) => 24 + s.len(),
            serde_json::Value::Array(a) => 24 + a.iter().map(json).sum::<usize>(),
            serde_json::Value::Object(o) => {
                24 + o.iter().map(|(k, v)| 24 + k.len() + json(v)).sum::<usize>()
            }
            _ => 24,
        }
    }
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    256 + m.content.len()
        + text(&m.tool_call_id)
        + text(&m.status_reason)
        + text(&m.model)
        + [&m.tool_calls, &m.attachments, &m.citations]
            .into_iter()
            .flatten()
            .map(json)
            .sum::<usize>()
}

/// The conversations' known histories, shared by this process's turn starts.
#[derive(Default)]
pub struct HistoryCache {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_conversation: HashMap<Uuid, (Known, u64)>,
    bytes: usize,
    clock: u64,
}

impl HistoryCache {
    /// What is known of the conversation, if anything, taken out: the start that extends it
    /// puts the new state back ([`HistoryCache::put`]), and its messages move rather than
    /// being copied. A start that fails leaves nothing, and the next one reads whole.
    pub fn take(&self, conversation: Uuid) -> Option<Known> {
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (known, _) = e.by_conversation.remove(&conversation)?;
        e.bytes -= known.bytes;
        Some(known)
    }

    /// Keeps `known` as the conversation's history (replacing what was), within the bounds.
    pub fn put(&self, conversation: Uuid, known: Known) {
        if known.bytes > MAX_BYTES / 8 {
            self.forget(conversation);
            return;
        }
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        e.clock += 1;
        let now = e.clock;
        e.bytes += known.bytes;
        if let Some((old, _)) = e.by_conversation.insert(conversation, (known, now)) {
            e.bytes -= old.bytes;
        }
        if e.by_conversation.len() > MAX_CONVERSATIONS || e.bytes > MAX_BYTES {
            e.evict_oldest();
        }
    }

    /// Forgets the conversation (its history is read whole next time).
    pub fn forget(&self, conversation: Uuid) {
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((old, _)) = e.by_conversation.remove(&conversation) {
            e.bytes -= old.bytes;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_conversation
            .len()
    }
}

impl Entries {
    /// Drops the least recently used eighth (at least enough to be within the bounds again),
    /// so that eviction is rare rather than a scan on every insert.
    fn evict_oldest(&mut self) {
        let mut ages: Vec<(u64, Uuid, usize)> = self
            .by_conversation
            .iter()
            .map(|(id, (known, used))| (*used, *id, known.bytes))
            .collect();
        ages.sort_unstable_by_key(|(used, _, _)| *used);
        let mut count = self.by_conversation.len();
        let floor = MAX_CONVERSATIONS - MAX_CONVERSATIONS / 8;
        let byte_floor = MAX_BYTES - MAX_BYTES / 8;
        for (_, id, bytes) in ages {
            if count <= floor && self.bytes <= byte_floor {
                break;
            }
            self.by_conversation.remove(&id);
            self.bytes -= bytes;
            count -= 1;
        }
    }
}

#[cfg(test)]
#[path = "history_cache_tests.rs"]
mod tests;
