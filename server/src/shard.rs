//! Per-thread shards of the connection pools (Postgres, the model's HTTP endpoint).
//!
//! Each actix worker is a single-threaded runtime, and a turn runs entirely on the worker that
//! accepted its request. A pooled connection, though, is driven by a task on the runtime that
//! opened it: when a turn on another worker uses it, every message crosses threads both ways
//! (a wake-up through the kernel, a context switch, cold caches). With one shard per thread a
//! turn's database and model traffic stay on its own thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Threads are numbered in the order they first ask.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
}

/// One shard per worker thread (actix starts one per CPU) and one for the rest: startup and
/// background tasks.
pub fn count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) + 1
}

/// `total` split as evenly as possible into `shards` parts, none below one.
pub fn split(total: usize, shards: usize) -> Vec<usize> {
    let shards = shards.max(1);
    (0..shards)
        .map(|i| (total / shards + usize::from(i < total % shards)).max(1))
        .collect()
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

    /// The calling thread's shard.
    pub fn current(&self) -> &T {
        let slot = SLOT.with(|s| *s);
        &self.shards[slot % self.shards.len()]
    }

    pub fn all(&self) -> &[T] {
        &self.shards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_total_and_gives_every_shard_one() {
        assert_eq!(split(16, 3), [6, 5, 5]);
        assert_eq!(split(2, 3), [1, 1, 1]);
        assert_eq!(split(9, 1), [9]);
        assert_eq!(split(4, 0), [4]);
    }

    #[test]
    fn a_thread_keeps_its_shard_and_threads_spread_out() {
        let sharded = Sharded::build(2, Ok::<_, ()>).unwrap();
        let mine = *sharded.current();
        assert_eq!(*sharded.current(), mine);
        let other =
            std::thread::scope(|s| s.spawn(|| *sharded.current()).join().unwrap_or(usize::MAX));
        assert!(other < 2);
    }
}
