//! Followers here of turns running on other processes: each waits on a watch that the
//! channel's `changed:` notifications ([`super::channel`]) bump.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

/// Followers here of turns running elsewhere, woken when those turns announce a change.
#[derive(Default, Clone)]
pub struct RemoteTurns {
    inner: Arc<Mutex<HashMap<Uuid, watch::Sender<u64>>>>,
}

/// A follower's subscription; the last one of a turn removes its entry.
pub struct RemoteWatch {
    turns: RemoteTurns,
    turn_id: Uuid,
    rx: watch::Receiver<u64>,
}

impl RemoteTurns {
    /// Subscribes to the turn's announcements (none when the lock is poisoned).
    pub fn watch(&self, turn_id: Uuid) -> Option<RemoteWatch> {
        let mut m = self.inner.lock().ok()?;
        let rx = m
            .entry(turn_id)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe();
        Some(RemoteWatch {
            turns: self.clone(),
            turn_id,
            rx,
        })
    }

    /// A turn on another process committed a step or ended.
    pub fn changed(&self, turn_id: Uuid) {
        if let Ok(m) = self.inner.lock() {
            if let Some(tx) = m.get(&turn_id) {
                tx.send_modify(|v| *v = v.wrapping_add(1));
            }
        }
    }
}

impl Drop for RemoteWatch {
    fn drop(&mut self) {
        if let Ok(mut m) = self.turns.inner.lock() {
            // This receiver still counts.
            if m.get(&self.turn_id)
                .is_some_and(|tx| tx.receiver_count() <= 1)
            {
                m.remove(&self.turn_id);
            }
        }
    }
}

impl RemoteWatch {
    /// Waits until the turn announces a change, or `wait` passes.
    pub async fn changed_within(&mut self, wait: Duration) {
        let _ = tokio::time::timeout(wait, self.rx.changed()).await;
        self.rx.borrow_and_update();
    }
}
