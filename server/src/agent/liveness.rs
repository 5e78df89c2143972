//! Liveness per process: this process's heartbeat row, and the reaper that ends the turns of
//! processes whose heartbeat went stale ([`crate::db::models::liveness`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::db;
use crate::db::models::liveness;

/// `[durable]` in the settings: replica liveness and the shutdown drain.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DurableSettings {
    /// A process whose heartbeat is older than this is dead: its turns are ended.
    #[serde(
        rename = "replica_timeout_secs",
        with = "crate::config::serde_util::secs"
    )]
    pub replica_timeout: Duration,
    /// On SIGTERM, running turns get this long to finish before they are stopped.
    #[serde(
        rename = "shutdown_grace_secs",
        with = "crate::config::serde_util::secs"
    )]
    pub shutdown_grace: Duration,
    /// A tool call waiting for approval longer than this expires: it does not run, and the
    /// model is told so.
    #[serde(rename = "approval_ttl_secs", with = "crate::config::serde_util::secs")]
    pub approval_ttl: Duration,
}

impl DurableSettings {
    /// Refuses a zero replica timeout (every process would look dead at once).
    pub fn validate(&self) -> Result<(), crate::config::ConfigError> {
        if self.replica_timeout.is_zero() {
            return Err(crate::config::ConfigError::invalid(
                "durable.replica_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.approval_ttl.is_zero() {
            return Err(crate::config::ConfigError::invalid(
                "durable.approval_ttl_secs",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

impl Default for DurableSettings {
    fn default() -> Self {
        Self {
            replica_timeout: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(20),
            approval_ttl: Duration::from_secs(86_400),
        }
    }
}

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
