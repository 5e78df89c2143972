//! A bound on costly requests running at once, overall and per user: uploads (taken before a
//! byte of the body is read, so parallel uploads cannot hold more than `limit ×
//! max_file_bytes`) and full-text searches (so searching, however heavy, leaves the
//! machine's other cores to everyone else's requests).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

type Active = Arc<Mutex<HashMap<Uuid, usize>>>;

/// Admission control for one kind of request.
pub struct ConcurrencyGate {
    total: Arc<Semaphore>,
    per_user: usize,
    active: Active,
}

/// Held while one admitted request runs.
pub struct GatePermit {
    _total: OwnedSemaphorePermit,
    _user: UserSlot,
}

/// One of a user's slots; given back when dropped.
struct UserSlot {
    user: Uuid,
    active: Active,
}

impl ConcurrencyGate {
    pub fn new(total: usize, per_user: usize) -> Self {
        Self {
            total: Arc::new(Semaphore::new(total.max(1))),
            per_user: per_user.max(1),
            active: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// One of `user`'s slots, unless they hold all of theirs.
    fn user_slot(&self, user: Uuid) -> Option<UserSlot> {
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let mine = active.entry(user).or_insert(0);
        if *mine >= self.per_user {
            return None;
        }
        *mine += 1;
        Some(UserSlot {
            user,
            active: Arc::clone(&self.active),
        })
    }

    /// A permit, or `None` when `user` or the server has too many requests in flight.
    pub fn try_admit(&self, user: Uuid) -> Option<GatePermit> {
        let slot = self.user_slot(user)?;
        let total = Arc::clone(&self.total).try_acquire_owned().ok()?;
        Some(GatePermit {
            _total: total,
            _user: slot,
        })
    }

    /// A permit, waiting up to `wait` for a server-wide slot; `None` at once when `user`
    /// has too many in flight, or after `wait`.
    pub async fn admit_within(&self, user: Uuid, wait: Duration) -> Option<GatePermit> {
        let slot = self.user_slot(user)?;
        let total = tokio::time::timeout(wait, Arc::clone(&self.total).acquire_owned())
            .await
            .ok()?
            .ok()?;
        Some(GatePermit {
            _total: total,
            _user: slot,
        })
    }
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = active.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                active.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_overall_and_per_user() {
        let gate = ConcurrencyGate::new(3, 2);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let a1 = gate.try_admit(a);
        let a2 = gate.try_admit(a);
        assert!(a1.is_some() && a2.is_some());
        assert!(gate.try_admit(a).is_none());
        let b1 = gate.try_admit(b);
        assert!(b1.is_some());
        assert!(gate.try_admit(b).is_none(), "overall limit");
        drop(a1);
        assert!(gate.try_admit(b).is_some());
    }

    #[tokio::test]
    async fn a_waiting_admission_gets_the_next_free_slot_or_gives_up() {
        let gate = ConcurrencyGate::new(1, 1);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let held = gate.try_admit(a);
        assert!(held.is_some());
        assert!(
            gate.admit_within(a, Duration::ZERO).await.is_none(),
            "per user"
        );
        assert!(gate
            .admit_within(b, Duration::from_millis(20))
            .await
            .is_none());
        // A failed wait gave b's slot back.
        drop(held);
        assert!(gate
            .admit_within(b, Duration::from_millis(20))
            .await
            .is_some());
    }
}
