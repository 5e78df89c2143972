//! How long an upload may take to arrive: its whole body within a deadline, and at least a
//! minimum rate after a short grace, so a client trickling bytes loses its upload slot
//! (taken before the body is read, [`super::uploads`]) instead of holding it forever.

use std::time::Duration;

use tokio::time::Instant;

/// The first seconds of an upload are not held to the rate (a slow start, TLS, a client
/// still reading the file).
const GRACE: Duration = Duration::from_secs(5);

/// The pace one upload is held to, from its first read.
#[derive(Debug, Clone, Copy)]
pub struct BodyPace {
    started: Instant,
    deadline: Duration,
    min_bytes_per_sec: u64,
}

impl BodyPace {
    pub fn start(deadline: Duration, min_bytes_per_sec: u64) -> Self {
        Self {
            started: Instant::now(),
            deadline,
            min_bytes_per_sec,
        }
    }

    /// When the body must have grown past `received` bytes: by the rate (after the grace),
    /// and never after the deadline.
    pub fn next_by(&self, received: usize) -> Instant {
        let received = u64::try_from(received).unwrap_or(u64::MAX);
        let by_rate = match self.min_bytes_per_sec {
            0 => self.deadline,
            rate => GRACE + Duration::from_secs_f64((received + 1) as f64 / rate as f64),
        };
        self.started + by_rate.min(self.deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_gives_way_to_the_deadline() {
        let pace = BodyPace::start(Duration::from_secs(60), 1000);
        let after = |n| pace.next_by(n) - pace.started;
        assert_eq!(after(0), GRACE + Duration::from_millis(1));
        assert_eq!(after(9_999), GRACE + Duration::from_secs(10));
        assert_eq!(after(10_000_000), Duration::from_secs(60));
        let no_rate = BodyPace::start(Duration::from_secs(7), 0);
        assert_eq!(no_rate.next_by(5) - no_rate.started, Duration::from_secs(7));
    }
}
