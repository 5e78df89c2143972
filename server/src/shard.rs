//! Per-thread shards of the connection pools (Postgres, the model's HTTP endpoint).
//!
//! Each actix worker is a single-threaded runtime, and a turn runs entirely on the worker that
//! accepted its request. A pooled connection, though, is driven by a task on the runtime that
//! opened it: when a turn on another worker uses it, every message crosses threads both ways
//! (a wake-up through the kernel, a context switch, cold caches). With one shard per thread a
//! turn's database and model traffic stay on its own thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// actix names its worker threads like this.
const WORKER_THREAD: &str = "actix-server worker";

static NEXT_WORKER: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// Worker threads are numbered from 1 in the order they first ask; every other thread
    /// (startup, background tasks on the main runtime, tests) shares shard 0.
    static SLOT: usize = match std::thread::current().name() {
        Some(name) if name.starts_with(WORKER_THREAD) => NEXT_WORKER.fetch_add(1, Ordering::Relaxed),
        _ => 0,
    };
}

/// One shard for the threads that are not workers, and one per worker thread (actix starts
/// one per CPU).
pub fn count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) + 1
}

/// `total` split over `shards` shards: the shared shard 0 (startup and background work) gets
/// a little, the worker shards the rest evenly; none gets less than one.
pub fn split(total: usize, shards: usize) -> Vec<usize> {
    let workers = shards.max(1) - 1;
    if workers == 0 {
        return vec![total.max(1)];
    }
    let shared = (total / 8).clamp(1, 2);
    let rest = total.saturating_sub(shared);
    std::iter::once(shared)
        .chain((0..workers).map(|i| (rest / workers + usize::from(i < rest % workers)).max(1)))
        .collect()
}

/// The shard of thread slot `slot` among `shards`: slot 0 (not a worker) takes shard 0, and
/// worker slots cycle over the worker shards only. A worker numbered past the shard count (a
/// worker actix started again after a panic, or, in tests, the workers of the many servers
/// of one process) must never land on the small shared shard, where background work may
/// hold its one connection for long (a document's extraction).
fn shard_of(slot: usize, shards: usize) -> usize {
    match (slot, shards) {
        (0, _) | (_, 0 | 1) => 0,
        (slot, shards) => 1 + (slot - 1) % (shards - 1),
    }
}

/// One `T` per shard; each thread uses its own.
#[derive(Debug)]
pub struct Sharded<T> {
    shards: Arc<[T]>,
}

impl<T> Clone for Sharded<T> {
    fn clone(&self) -> Self {
        Self {
            shards: self.shards.clone(),
        }
    }
}

impl<T> Sharded<T> {
    /// Builds shard `i` of `n` with `make(i)`.
    pub fn build<E>(n: usize, make: impl FnMut(usize) -> Result<T, E>) -> Result<Self, E> {
        let shards = (0..n.max(1)).map(make).collect::<Result<Vec<_>, E>>()?;
        Ok(Self {
            shards: shards.into(),
        })
    }

    /// Builds shard `i` of `n` with `make(i)`, which cannot fail.
    pub fn new(n: usize, make: impl FnMut(usize) -> T) -> Self {
        Self {
            shards: (0..n.max(1)).map(make).collect::<Vec<_>>().into(),
        }
    }

    /// The calling thread's shard.
    pub fn current(&self) -> &T {
        &self.shards[shard_of(SLOT.with(|s| *s), self.shards.len())]
    }

    pub fn all(&self) -> &[T] {
        &self.shards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_gives_the_workers_nearly_all_and_every_shard_one() {
        assert_eq!(split(16, 3), [2, 7, 7]);
        assert_eq!(split(128, 5), [2, 32, 32, 31, 31]);
        assert_eq!(split(2, 3), [1, 1, 1]);
        assert_eq!(split(9, 1), [9]);
        assert_eq!(split(4, 0), [4]);
    }

    #[test]
    fn workers_past_the_shard_count_never_take_the_shared_shard() {
        // 3 shards: the shared one and two worker shards.
        let of = |slot| shard_of(slot, 3);
        assert_eq!(of(0), 0);
        assert_eq!(
            (of(1), of(2), of(3), of(4), of(5), of(6)),
            (1, 2, 1, 2, 1, 2)
        );
        assert_eq!(shard_of(7, 1), 0, "one shard: everyone shares it");
        assert_eq!(shard_of(7, 0), 0);
    }

    #[test]
    fn each_worker_thread_has_its_own_shard_and_other_threads_share_the_first() {
        let sharded = Sharded::build(64, Ok::<_, ()>).unwrap();
        assert_eq!(*sharded.current(), 0, "a test thread is not a worker");
        let on = |name: &str| {
            std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name(name.to_owned())
                    .spawn_scoped(s, || (*sharded.current(), *sharded.current()))
                    .and_then(|t| t.join().map_err(|_| std::io::Error::other("panicked")))
                    .unwrap()
            })
        };
        let (a, a_again) = on("actix-server worker 0");
        let (b, _) = on("actix-server worker 1");
        assert_eq!(a, a_again);
        assert!(a > 0 && b > 0 && a != b, "{a} {b}");
        assert_eq!(on("tokio-runtime-worker"), (0, 0));
    }
}
