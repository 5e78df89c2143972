//! A bound on uploads buffered at once (overall and per user), taken before a byte of the
//! body is read, so parallel uploads cannot hold more than `limit × max_file_bytes`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Admission control for uploads.
pub struct UploadGate {
    total: Arc<Semaphore>,
    per_user: usize,
    active: Arc<Mutex<HashMap<Uuid, usize>>>,
}

/// Held while one upload is buffered and written.
pub struct UploadPermit {
    _total: OwnedSemaphorePermit,
    user: Uuid,
    active: Arc<Mutex<HashMap<Uuid, usize>>>,
}

impl UploadGate {
    pub fn new(total: usize, per_user: usize) -> Self {
        Self {
            total: Arc::new(Semaphore::new(total.max(1))),
            per_user: per_user.max(1),
            active: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A permit, or `None` when `user` or the server has too many uploads in flight.
    pub fn try_admit(&self, user: Uuid) -> Option<UploadPermit> {
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let mine = active.get(&user).copied().unwrap_or(0);
        if mine >= self.per_user {
            return None;
        }
        let total = Arc::clone(&self.total).try_acquire_owned().ok()?;
        active.insert(user, mine + 1);
        Some(UploadPermit {
            _total: total,
            user,
            active: Arc::clone(&self.active),
        })
    }
}

impl Drop for UploadPermit {
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
        let gate = UploadGate::new(3, 2);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let a1 = gate.try_admit(a).unwrap();
        let _a2 = gate.try_admit(a).unwrap();
        assert!(gate.try_admit(a).is_none());
        let _b1 = gate.try_admit(b).unwrap();
        assert!(gate.try_admit(b).is_none(), "overall limit");
        drop(a1);
        assert!(gate.try_admit(b).is_some());
    }
}
