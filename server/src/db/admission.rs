//! Admission of turn starts. A turn's start is one transaction on a pooled connection; a burst
//! of thousands of starts at one instant used to wait for a connection only as long as any
//! request does (the acquire timeout), and those still waiting then got 503 although the
//! burst would have been served a moment later. Starts now wait their turn for as long as the
//! turn itself may run (the turn deadline; a fixed 60 s refused thousands of a 10,000-start
//! burst on a busy machine), and the queue is bounded: past the configured depth a start is
//! refused at once with 503 and `Retry-After`, so a flood cannot pile up without limit.
//!
//! Starts queue here, not in the pool: only a few at a time (half of each pool shard) wait
//! for a connection. The pool's own queue is FIFO, so thousands of starts queued there would
//! stand in front of the running turns' step and final commits, which then time out — a
//! burst admitted that way never finishes (the load kit saw 7,945 of 10,000 admitted and 6
//! done).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool::managed::TimeoutType;
use tokio::sync::Semaphore;

use super::DbError;
use super::{Pool, PoolError, PooledConn};
use crate::shard::Sharded;

/// What a refused start is told to wait before retrying.
const RETRY_AFTER_SECS: u64 = 2;

/// How many more times a start tries to open a connection that timed out opening.
const SLOW_OPEN_RETRIES: u32 = 3;

/// Starts waiting for a connection, shared by every shard of a pool.
#[derive(Debug, Clone)]
pub struct StartQueue {
    waiting: Arc<AtomicUsize>,
    depth: usize,
    /// Per pool shard, the starts allowed to wait for one of its connections at once: half
    /// the shard, so that the running turns' commits on that shard always find room. (One
    /// count for the whole pool let every start of a burst land on one worker's shard.)
    at_pool: Sharded<Semaphore>,
}

/// Counts a start as waiting until it has its connection (or gives up).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl StartQueue {
    /// A queue admitting at most `depth` waiting starts; `shard_sizes` are the pool shards'
    /// sizes, half of each (rounded up) the starts that may wait at that shard.
    pub fn new(depth: usize, shard_sizes: &[usize]) -> Self {
        Self {
            waiting: Arc::new(AtomicUsize::new(0)),
            depth,
            at_pool: Sharded::new(shard_sizes.len(), |i| {
                Semaphore::new(shard_sizes[i].div_ceil(2))
            }),
        }
    }

    /// Starts waiting now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// A connection for a turn's start, queued behind earlier starts for up to `wait` (the
    /// turn's deadline: a start that waited longer could not finish anyway); 503 with
    /// `Retry-After` when the queue is full, or when `wait` ran out.
    pub async fn admit<F, Fut>(&self, wait: Duration, mut get: F) -> Result<PooledConn, DbError>
    where
        F: FnMut(Duration) -> Fut,
        Fut: std::future::Future<Output = Result<PooledConn, PoolError>>,
    {
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        let _counted = Waiting(&self.waiting);
        if before >= self.depth {
            return Err(DbError::Overloaded {
                message: "too many replies are starting at once; retry shortly",
                retry_after_secs: RETRY_AFTER_SECS,
            });
        }
        let slow = || DbError::Overloaded {
            message: "replies are starting slowly; retry shortly",
            retry_after_secs: RETRY_AFTER_SECS,
        };
        let started = tokio::time::Instant::now();
        let permit = tokio::time::timeout(wait, self.at_pool.current().acquire())
            .await
            .map_err(|_| slow())?
            .map_err(|e| DbError::Unavailable(e.into()))?;
        let mut slow_opens = 0;
        let conn = loop {
            match get(wait.saturating_sub(started.elapsed())).await {
                Ok(conn) => break conn,
                // Busy, not broken: the same answer as running out of time in the queue.
                Err(PoolError::Timeout(TimeoutType::Wait)) => return Err(slow()),
                // A new connection slower to open (or check) than the acquire timeout: a
                // loaded Postgres forks backends slowly, and a start may wait longer than
                // that. Tried again a few times; one that never opens is unavailable.
                Err(PoolError::Timeout(_))
                    if slow_opens < SLOW_OPEN_RETRIES && started.elapsed() < wait =>
                {
                    slow_opens += 1;
                }
                Err(e) => return Err(e.into()),
            }
        };
        drop(permit);
        Ok(conn)
    }
}

impl Pool {
    /// A connection for a turn's start, waiting up to `wait` ([`StartQueue::admit`]).
    pub async fn get_for_start(&self, wait: Duration) -> Result<PooledConn, DbError> {
        self.starts
            .admit(wait, |left| async move { self.get_within(left).await })
            .await
    }

    /// A connection for a short write on the chat path (creating a conversation), queued
    /// with the turn starts ([`StartQueue::admit`]) rather than failing after the pool's
    /// acquire timeout: a chat opens a conversation and then starts a turn in it, and a
    /// loaded server should answer both slower, not refuse the first with 503.
    pub async fn get_queued(&self, wait: Duration) -> Result<PooledConn, DbError> {
        self.get_for_start(wait).await
    }

    /// Turn starts waiting for a connection right now.
    pub fn starts_waiting(&self) -> usize {
        self.starts.waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_depth_a_start_is_refused_at_once_with_retry_after() {
        let queue = StartQueue::new(2, &[4]);
        let gate = Arc::new(tokio::sync::Notify::new());
        let mut held = Vec::new();
        for _ in 0..2 {
            let (q, g) = (queue.clone(), gate.clone());
            held.push(tokio::spawn(async move {
                q.admit(Duration::from_secs(60), |_| {
                    let g = g.clone();
                    async move {
                        g.notified().await;
                        Err(PoolError::Closed)
                    }
                })
                .await
                .map(|_| ())
            }));
        }
        while queue.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        let refused = queue
            .admit(Duration::from_secs(60), |_| async {
                Err(PoolError::Closed)
            })
            .await
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(refused, DbError::Overloaded { retry_after_secs, .. } if retry_after_secs == RETRY_AFTER_SECS),
            "{refused:?}"
        );
        assert_eq!(queue.waiting(), 2, "a refused start does not stay counted");
        gate.notify_waiters();
        for h in held {
            let _ = h.await.unwrap();
        }
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_busy_pool_is_overloaded_and_an_unreachable_one_unavailable() {
        let queue = StartQueue::new(10, &[4]);
        let wait = Duration::from_secs(1);
        let busy = queue
            .admit(wait, |_| async {
                Err(PoolError::Timeout(TimeoutType::Wait))
            })
            .await
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(busy, DbError::Overloaded { .. }), "{busy:?}");
        let down = queue
            .admit(wait, |_| async {
                Err(PoolError::Timeout(TimeoutType::Create))
            })
            .await
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(down, DbError::Unavailable(_)), "{down:?}");
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_connection_slow_to_open_is_tried_again_a_few_times() {
        let queue = StartQueue::new(10, &[4]);
        let wait = Duration::from_secs(60);
        let tries = AtomicUsize::new(0);
        // Times out opening twice, then the third attempt's pool answers (here: closed,
        // which is not a timeout and so ends the tries).
        let third = queue
            .admit(wait, |_| {
                let n = tries.fetch_add(1, Ordering::AcqRel);
                async move {
                    Err(if n < 2 {
                        PoolError::Timeout(TimeoutType::Create)
                    } else {
                        PoolError::Closed
                    })
                }
            })
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(tries.load(Ordering::Acquire), 3);
        assert!(matches!(third, DbError::Unavailable(_)), "{third:?}");
        tries.store(0, Ordering::Release);
        let never = queue
            .admit(wait, |_| {
                tries.fetch_add(1, Ordering::AcqRel);
                async { Err(PoolError::Timeout(TimeoutType::Create)) }
            })
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            tries.load(Ordering::Acquire),
            1 + SLOW_OPEN_RETRIES as usize
        );
        assert!(matches!(never, DbError::Unavailable(_)), "{never:?}");
    }
}
