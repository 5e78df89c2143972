//! Liveness per process: this process's heartbeat row, and the reaper that ends the turns of
//! processes whose heartbeat went stale ([`super::heartbeat`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::heartbeat as liveness;
use crate::db;

/// This process's identity and whether it may judge others (it must itself have been in
/// touch with the database for a whole timeout: after an outage every heartbeat is stale,
/// and a process must not end the turns of peers that merely could not write theirs).
#[derive(Clone)]
pub struct Liveness {
    pub process_id: Uuid,
    timeout: Duration,
    /// Since when our heartbeats have succeeded without a failure.
    healthy_since: Arc<Mutex<Option<Instant>>>,
    stopped: Arc<AtomicBool>,
}

impl Liveness {
    pub fn new(timeout: Duration) -> Self {
        Self {
            process_id: Uuid::new_v4(),
            timeout: timeout.max(Duration::from_secs(1)),
            healthy_since: Arc::default(),
            stopped: Arc::default(),
        }
    }

    fn record(&self, ok: bool) {
        if let Ok(mut h) = self.healthy_since.lock() {
            match (ok, *h) {
                (true, None) => *h = Some(Instant::now()),
                (false, _) => *h = None,
                _ => {}
            }
        }
    }

    fn may_judge(&self) -> bool {
        self.healthy_since
            .lock()
            .ok()
            .and_then(|h| *h)
            .is_some_and(|since| since.elapsed() >= self.timeout)
    }

    /// Starts the heartbeat (every third of the timeout) and the reaper (every half).
    pub fn spawn(&self, pool: db::Pool) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.timeout / 3);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut since_reap = Duration::MAX;
            loop {
                let began = Instant::now();
                tick.tick().await;
                if me.stopped.load(Ordering::Relaxed) {
                    return;
                }
                let beat = tokio::time::timeout(me.timeout / 3, async {
                    let mut conn = pool.get().await.ok()?;
                    liveness::heartbeat(&mut conn, me.process_id).await.ok()
                })
                .await;
                me.record(matches!(beat, Ok(Some(()))));
                since_reap = since_reap.saturating_add(began.elapsed());
                if since_reap >= me.timeout / 2 && me.may_judge() {
                    since_reap = Duration::ZERO;
                    me.reap(&pool).await;
                }
            }
        });
    }

    async fn reap(&self, pool: &db::Pool) {
        let Ok(mut conn) = pool.get().await else {
            return;
        };
        match liveness::reap(&mut conn, self.process_id, self.timeout).await {
            Ok(r) if r.processes > 0 => tracing::warn!(
                processes = r.processes,
                turns = r.turns,
                freed = r.freed,
                "ended the turns of server processes that stopped answering"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "looking for dead server processes failed"),
        }
    }

    /// Stops the heartbeat and removes this process's row (a clean stop: nothing to reap).
    pub async fn retire(&self, pool: &db::Pool) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Ok(mut conn) = pool.get().await {
            let _ = liveness::retire(&mut conn, self.process_id).await;
        }
    }
}
