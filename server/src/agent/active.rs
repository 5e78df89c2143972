//! Turns running in this process, so that `POST .../cancel` can stop them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use super::turn::{StopReason, TurnControl};

/// Conversation id -> the control of its running turn.
#[derive(Default, Clone)]
pub struct ActiveTurns {
    inner: Arc<Mutex<HashMap<Uuid, (Uuid, TurnControl)>>>,
}

/// Removes the entry when the turn ends, however it ends.
pub struct ActiveGuard {
    turns: ActiveTurns,
    conversation_id: Uuid,
    turn_id: Uuid,
}

impl ActiveTurns {
    /// Records a running turn and returns its control and a guard that forgets it on drop.
    pub fn register(&self, conversation_id: Uuid, turn_id: Uuid) -> (TurnControl, ActiveGuard) {
        let control = TurnControl::default();
        if let Ok(mut m) = self.inner.lock() {
            m.insert(conversation_id, (turn_id, control.clone()));
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

    /// Cancels the running turn of the conversation; false when none runs here.
    pub fn cancel(&self, conversation_id: Uuid) -> bool {
        let token = self
            .inner
            .lock()
            .ok()
            .and_then(|m| m.get(&conversation_id).map(|(_, t)| t.clone()));
        match token {
            Some(t) => {
                t.stop(StopReason::Cancelled);
                true
            }
            None => false,
        }
    }

    /// Stops every running turn (shutdown): each stores what it has and ends its stream.
    pub fn stop_all(&self, reason: StopReason) {
        let all: Vec<TurnControl> = self
            .inner
            .lock()
            .map(|m| m.values().map(|(_, c)| c.clone()).collect())
            .unwrap_or_default();
        for c in all {
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

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.turns.inner.lock() {
            if m.get(&self.conversation_id)
                .is_some_and(|(t, _)| *t == self.turn_id)
            {
                m.remove(&self.conversation_id);
            }
        }
    }
}
