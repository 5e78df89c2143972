//! Turns running in this process, so that a cancel (from this process or, through
//! [`crate::cluster::channel`], from any other) can stop them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::control::{StopReason, TurnControl};

/// One running turn.
#[derive(Clone)]
struct Entry {
    turn_id: Uuid,
    user_id: Uuid,
    control: TurnControl,
}

/// Conversation id -> its running turn; turn id -> its events (for followers).
/// `L` is what followers read of a running turn (the turn's event log).
#[derive(Clone)]
pub struct ActiveTurns<L> {
    inner: Arc<Mutex<HashMap<Uuid, Entry>>>,
    logs: Arc<Mutex<HashMap<Uuid, L>>>,
    /// Followers here of turns running on other processes ([`crate::turn::Follower`]).
    pub remote: super::remote::RemoteTurns,
}

/// Removes the entry when the turn ends, however it ends.
pub struct ActiveGuard<L> {
    turns: ActiveTurns<L>,
    conversation_id: Uuid,
    turn_id: Uuid,
}

impl<L> Default for ActiveTurns<L> {
    fn default() -> Self {
        Self {
            inner: Default::default(),
            logs: Default::default(),
            remote: Default::default(),
        }
    }
}

impl<L: Clone> ActiveTurns<L> {
    /// Records a running turn and returns its control and a guard that forgets it on drop.
    pub fn register(
        &self,
        conversation_id: Uuid,
        turn_id: Uuid,
        user_id: Uuid,
        log: L,
    ) -> (TurnControl, ActiveGuard<L>) {
        let control = TurnControl::default();
        if let Ok(mut m) = self.logs.lock() {
            m.insert(turn_id, log);
        }
        if let Ok(mut m) = self.inner.lock() {
            let entry = Entry {
                turn_id,
                user_id,
                control: control.clone(),
            };
            m.insert(conversation_id, entry);
        }
        (
            control,
            ActiveGuard {
                turns: self.clone(),
                conversation_id,
                turn_id,
            },
        )
    }

    fn controls(&self, pick: impl Fn(&Uuid, &Entry) -> bool) -> Vec<TurnControl> {
        self.inner
            .lock()
            .map(|m| {
                m.iter()
                    .filter(|(c, e)| pick(c, e))
                    .map(|(_, e)| e.control.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Cancels the running turn of the conversation; false when none runs here.
    pub fn cancel(&self, conversation_id: Uuid) -> bool {
        let found = self.controls(|c, _| *c == conversation_id);
        found.iter().for_each(|c| c.stop(StopReason::Cancelled));
        !found.is_empty()
    }

    /// The running turn of the conversation, if it runs here.
    pub fn turn_of(&self, conversation_id: Uuid) -> Option<Uuid> {
        self.inner
            .lock()
            .ok()
            .and_then(|m| m.get(&conversation_id).map(|e| e.turn_id))
    }

    /// The events of the turn, if it runs here.
    pub fn log_of(&self, turn_id: Uuid) -> Option<L> {
        self.logs.lock().ok().and_then(|m| m.get(&turn_id).cloned())
    }

    /// Cancels the turn if it runs here.
    pub fn cancel_turn(&self, turn_id: Uuid) -> bool {
        let found = self.controls(|_, e| e.turn_id == turn_id);
        found.iter().for_each(|c| c.stop(StopReason::Cancelled));
        !found.is_empty()
    }

    /// Stops every turn of the user running here.
    pub fn stop_user(&self, user_id: Uuid, reason: StopReason) {
        for c in self.controls(|_, e| e.user_id == user_id) {
            c.stop(reason);
        }
    }

    /// Stops every running turn (shutdown): each stores what it has and ends its stream.
    pub fn stop_all(&self, reason: StopReason) {
        for c in self.controls(|_, _| true) {
            c.stop(reason);
        }
    }

    /// Number of turns running in this process.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<L> Drop for ActiveGuard<L> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.turns.logs.lock() {
            m.remove(&self.turn_id);
        }
        if let Ok(mut m) = self.turns.inner.lock() {
            if m.get(&self.conversation_id)
                .is_some_and(|e| e.turn_id == self.turn_id)
            {
                m.remove(&self.conversation_id);
            }
        }
    }
}
