//! A breaker per search provider, in this process: after `failures` failures in a row the
//! provider is skipped for `cooldown`, then one query tries it again (a failure reopens it at
//! once, a success closes it). Smaller than the model providers' breaker on purpose: a search
//! is one short request, and another allowed provider answers while one is open.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Default, Clone, Copy)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
}

/// The breakers of every provider, by name.
#[derive(Debug)]
pub struct Breakers {
    failures: u32,
    cooldown: Duration,
    states: Mutex<HashMap<String, State>>,
}

impl Breakers {
    pub fn new(failures: u32, cooldown: Duration) -> Self {
        Self {
            failures: failures.max(1),
            cooldown,
            states: Mutex::new(HashMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, State>) -> R) -> R {
        let mut guard = match self.states.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Whether `provider` may be called now (closed, or open with its cooldown over).
    pub fn allows(&self, provider: &str) -> bool {
        self.with(|s| {
            s.get(provider)
                .and_then(|st| st.open_until)
                .is_none_or(|until| Instant::now() >= until)
        })
    }

    /// Whether `provider`'s breaker is open now.
    pub fn is_open(&self, provider: &str) -> bool {
        !self.allows(provider)
    }

    pub fn success(&self, provider: &str) {
        self.with(|s| {
            s.remove(provider);
        });
    }

    pub fn failure(&self, provider: &str) {
        let (limit, cooldown) = (self.failures, self.cooldown);
        self.with(|s| {
            let st = s.entry(provider.to_owned()).or_default();
            st.failures = st.failures.saturating_add(1);
            if st.failures >= limit {
                st.open_until = Some(Instant::now() + cooldown);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_failures_in_a_row_and_closes_on_success() {
        let b = Breakers::new(2, Duration::from_secs(60));
        assert!(b.allows("a"));
        b.failure("a");
        assert!(b.allows("a"), "one failure is not enough");
        b.failure("a");
        assert!(b.is_open("a"));
        assert!(b.allows("b"), "per provider");
        b.success("a");
        assert!(b.allows("a"));
        let quick = Breakers::new(1, Duration::ZERO);
        quick.failure("x");
        assert!(quick.allows("x"), "after its cooldown one call tries again");
    }
}
