//! Throttling of sign-in attempts, per account and per client address. An account is slowed
//! down (exponentially, capped at a minute) rather than locked, so an attacker cannot lock
//! the real user out for long; an address that fails too often in a window waits it out.
//!
//! An attempt is counted when it *starts* (before the password is hashed), under the same
//! lock as the check, so a parallel burst gets at most the limit of password checks; a
//! success takes its count back. Account names are kept only as keyed hashes and both maps
//! are capped, so memory stays bounded whatever names arrive.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest an account is made to wait.
const MAX_ACCOUNT_DELAY: Duration = Duration::from_secs(60);
/// Failures older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Window for counting failures per address.
const ADDRESS_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Bound on remembered keys per map (a few MB at most).
pub const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    first: Instant,
    last: Instant,
}

/// In-process login throttle. (Per replica: with N replicas an attacker gets N times the
/// attempts, which still bounds guessing.)
pub struct LoginThrottle {
    account_limit: u32,
    address_limit: u32,
    /// Keys the account-name hash with a per-process random key (no chosen collisions).
    hasher: RandomState,
    accounts: Mutex<HashMap<u64, Failures>>,
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

impl LoginThrottle {
    pub fn new(account_limit: u32, address_limit: u32) -> Self {
        Self {
            account_limit: account_limit.max(1),
            address_limit: address_limit.max(1),
            hasher: RandomState::new(),
            accounts: Mutex::new(HashMap::new()),
            addresses: Mutex::new(HashMap::new()),
        }
    }

    /// Starts an attempt: `Err(wait)` when it must be refused for `wait`; otherwise the
    /// attempt counts as a failure until [`LoginThrottle::succeeded`] takes it back.
    pub fn begin(&self, account: &str, addr: Option<IpAddr>) -> Result<(), Duration> {
        self.begin_at(Instant::now(), account, addr)
    }

    /// The attempt begun for `account` succeeded: the account's failures are cleared and
    /// the address's count of this attempt is taken back.
    pub fn succeeded(&self, account: &str, addr: Option<IpAddr>) {
        let key = self.key(account);
        if let Ok(mut m) = self.accounts.lock() {
            m.remove(&key);
        }
        if let (Some(ip), Ok(mut m)) = (addr, self.addresses.lock()) {
            if let Some(f) = m.get_mut(&ip) {
                f.count = f.count.saturating_sub(1);
            }
        }
    }

    /// How many account and address keys are remembered.
    pub fn sizes(&self) -> (usize, usize) {
        let a = self.accounts.lock().map(|m| m.len()).unwrap_or(0);
        let b = self.addresses.lock().map(|m| m.len()).unwrap_or(0);
        (a, b)
    }

    fn key(&self, account: &str) -> u64 {
        self.hasher.hash_one(account.to_lowercase())
    }

    fn begin_at(&self, now: Instant, account: &str, addr: Option<IpAddr>) -> Result<(), Duration> {
        let key = self.key(account);
        // Lock order: addresses, then accounts (the only place both are held).
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        let mut accounts = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = addr.and_then(|ip| addresses.get(&ip)) {
            let window_end = f.first + ADDRESS_WINDOW;
            if f.count >= self.address_limit && now < window_end {
                return Err(window_end - now);
            }
        }
        if let Some(f) = accounts.get(&key) {
            if f.count >= self.account_limit && now.duration_since(f.first) < FORGET_AFTER {
                let excess = (f.count - self.account_limit).min(6);
                let delay = Duration::from_secs(1u64 << excess).min(MAX_ACCOUNT_DELAY);
                let until = f.last + delay;
                if now < until {
                    return Err(until - now);
                }
            }
        }
        bump(&mut accounts, key, now, FORGET_AFTER, self.account_limit);
        if let Some(ip) = addr {
            bump(&mut addresses, ip, now, ADDRESS_WINDOW, self.address_limit);
        }
        Ok(())
    }
}

/// Counts one attempt for `key`, making room first if the map is full.
fn bump<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, Failures>,
    key: K,
    now: Instant,
    window: Duration,
    limit: u32,
) {
    if map.len() >= MAX_ENTRIES && !map.contains_key(&key) {
        map.retain(|_, f| now.duration_since(f.first) < window);
        if map.len() >= MAX_ENTRIES {
            // Still full of fresh keys: keep only those actually being throttled.
            map.retain(|_, f| f.count >= limit);
        }
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
    }
    let entry = map.entry(key).or_insert(Failures {
        count: 0,
        first: now,
        last: now,
    });
    if now.duration_since(entry.first) >= window {
        *entry = Failures {
            count: 0,
            first: now,
            last: now,
        };
    }
    entry.count = entry.count.saturating_add(1);
    entry.last = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_is_slowed_then_recovers() {
        let t = LoginThrottle::new(3, 1000);
        let t0 = Instant::now();
        for i in 0..3 {
            assert!(t.begin_at(t0, "Alice", None).is_ok(), "attempt {i}");
        }
        let wait = t.begin_at(t0, "ALICE", None).unwrap_err();
        assert!(wait <= Duration::from_secs(1));
        assert!(t
            .begin_at(t0 + Duration::from_secs(2), "alice", None)
            .is_ok());
        // Never more than a minute, however many failures.
        for i in 0..50 {
            let _ = t.begin_at(t0 + Duration::from_secs(3 + 61 * i), "alice", None);
        }
        assert!(t
            .begin_at(t0 + Duration::from_secs(3 + 61 * 51), "alice", None)
            .is_ok());
        t.succeeded("alice", None);
        assert!(t.begin_at(t0, "alice", None).is_ok());
    }

    #[test]
    fn a_burst_gets_at_most_the_limit() {
        let t = LoginThrottle::new(5, 1000);
        let t0 = Instant::now();
        let passed = (0..60)
            .filter(|_| t.begin_at(t0, "bob", None).is_ok())
            .count();
        assert_eq!(passed, 5);
    }

    #[test]
    fn address_is_refused_for_the_window() {
        let t = LoginThrottle::new(1000, 2);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        t.begin_at(t0, "a", Some(ip)).unwrap();
        t.begin_at(t0, "b", Some(ip)).unwrap();
        assert!(t.begin_at(t0, "c", Some(ip)).is_err());
        assert!(t
            .begin_at(t0, "c", Some("10.0.0.2".parse().unwrap()))
            .is_ok());
        assert!(t.begin_at(t0 + ADDRESS_WINDOW, "c", Some(ip)).is_ok());
    }

    #[test]
    fn a_success_takes_its_count_back() {
        let t = LoginThrottle::new(1000, 2);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..10 {
            t.begin_at(t0, "a", Some(ip)).unwrap();
            t.succeeded("a", Some(ip));
        }
    }

    #[test]
    fn memory_is_bounded_whatever_names_arrive() {
        let t = LoginThrottle::new(5, u32::MAX);
        let t0 = Instant::now();
        let long = "x".repeat(1000);
        for i in 0..(MAX_ENTRIES + 10) {
            let _ = t.begin_at(t0, &format!("{long}{i}"), None);
        }
        assert!(t.sizes().0 <= MAX_ENTRIES, "{:?}", t.sizes());
    }
}
