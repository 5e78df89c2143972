//! How many runs go at once: at most `per_user` of one user's and `total` on this replica.
//! A run past either bound waits in line up to `wait`, then the tool answers "busy" (the
//! model can tell the user, or try later) instead of piling jails on the machine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Admission for sandbox runs.
pub struct RunGate {
    total: Arc<Semaphore>,
    per_user: usize,
    users: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
}

/// Held while a run goes; both slots come back when it is dropped.
pub struct RunPermit {
    _user: OwnedSemaphorePermit,
    _total: OwnedSemaphorePermit,
}

/// Which bound kept a run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// The user's own runs hold all their slots.
    User,
    /// This replica runs as many jails as it may.
    Replica,
}

impl RunGate {
    pub fn new(total: usize, per_user: usize) -> Self {
        Self {
            total: Arc::new(Semaphore::new(total.max(1))),
            per_user: per_user.max(1),
            users: Mutex::new(HashMap::new()),
        }
    }

    fn user(&self, user: Uuid) -> Arc<Semaphore> {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        // Forget users with nothing running, so the map does not grow with every user seen.
        users.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < self.per_user);
        Arc::clone(
            users
                .entry(user)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_user))),
        )
    }

    /// Both slots within `wait` (the user's first, then the replica's), with how long the
    /// run waited; or which bound was still full when the wait ran out.
    pub async fn admit(&self, user: Uuid, wait: Duration) -> Result<(RunPermit, Duration), Busy> {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + wait;
        let mine = tokio::time::timeout_at(deadline, self.user(user).acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or(Busy::User)?;
        let total = tokio::time::timeout_at(deadline, Arc::clone(&self.total).acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or(Busy::Replica)?;
        Ok((
            RunPermit {
                _user: mine,
                _total: total,
            },
            started.elapsed(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_per_user_and_per_replica_with_a_wait_in_line() {
        let gate = RunGate::new(2, 1);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let short = Duration::from_millis(50);
        let a1 = gate.admit(a, short).await.unwrap();
        assert_eq!(gate.admit(a, short).await.err(), Some(Busy::User));
        let _b1 = gate.admit(b, short).await.unwrap();
        assert_eq!(gate.admit(c, short).await.err(), Some(Busy::Replica));
        // A waiting run gets the slot freed while it waits.
        let freed = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(a1);
        });
        let (_c1, waited) = gate.admit(c, Duration::from_secs(5)).await.unwrap();
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        freed.await.unwrap();
    }
}
