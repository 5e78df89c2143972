//! Throttling of failed logins, per account and per client address. An account is slowed
//! down (exponentially, capped at a minute) rather than locked, so an attacker cannot lock
//! the real user out for long; an address that fails too often in a window waits it out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest an account is made to wait.
const MAX_ACCOUNT_DELAY: Duration = Duration::from_secs(60);
/// Failures older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Window for counting failures per address.
const ADDRESS_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Bound on remembered keys, so a flood of distinct names cannot grow memory without end.
const MAX_ENTRIES: usize = 100_000;

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
    accounts: Mutex<HashMap<String, Failures>>,
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

impl LoginThrottle {
    pub fn new(account_limit: u32, address_limit: u32) -> Self {
        Self {
            account_limit: account_limit.max(1),
            address_limit: address_limit.max(1),
            accounts: Mutex::new(HashMap::new()),
            addresses: Mutex::new(HashMap::new()),
        }
    }

    /// `Err(wait)` when this attempt must be refused for `wait`.
    pub fn check(&self, account: &str, addr: Option<IpAddr>) -> Result<(), Duration> {
        self.check_at(Instant::now(), account, addr)
    }

    pub fn record_failure(&self, account: &str, addr: Option<IpAddr>) {
        self.record_failure_at(Instant::now(), account, addr);
    }

    /// A successful login clears the account's failures (not the address's).
    pub fn record_success(&self, account: &str) {
        if let Ok(mut m) = self.accounts.lock() {
            m.remove(&account.to_lowercase());
        }
    }

    fn check_at(&self, now: Instant, account: &str, addr: Option<IpAddr>) -> Result<(), Duration> {
        if let (Some(ip), Ok(m)) = (addr, self.addresses.lock()) {
            if let Some(f) = m.get(&ip) {
                let window_end = f.first + ADDRESS_WINDOW;
                if f.count >= self.address_limit && now < window_end {
                    return Err(window_end - now);
                }
            }
        }
        if let Ok(m) = self.accounts.lock() {
            if let Some(f) = m.get(&account.to_lowercase()) {
                if f.count >= self.account_limit {
                    let excess = (f.count - self.account_limit).min(6);
                    let delay = Duration::from_secs(1u64 << excess).min(MAX_ACCOUNT_DELAY);
                    let until = f.last + delay;
                    if now < until {
                        return Err(until - now);
                    }
                }
            }
        }
        Ok(())
    }

    fn record_failure_at(&self, now: Instant, account: &str, addr: Option<IpAddr>) {
        if let Ok(mut m) = self.accounts.lock() {
            bump(&mut m, account.to_lowercase(), now, FORGET_AFTER);
        }
        if let (Some(ip), Ok(mut m)) = (addr, self.addresses.lock()) {
            bump(&mut m, ip, now, ADDRESS_WINDOW);
        }
    }
}

fn bump<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, Failures>,
    key: K,
    now: Instant,
    window: Duration,
) {
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
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
            assert!(t.check_at(t0, "Alice", None).is_ok(), "attempt {i}");
            t.record_failure_at(t0, "alice", None);
        }
        let wait = t.check_at(t0, "ALICE", None).unwrap_err();
        assert!(wait <= Duration::from_secs(1));
        assert!(t
            .check_at(t0 + Duration::from_secs(2), "alice", None)
            .is_ok());
        // Never more than a minute, however many failures.
        for _ in 0..50 {
            t.record_failure_at(t0, "alice", None);
        }
        assert!(t
            .check_at(t0 + Duration::from_secs(61), "alice", None)
            .is_ok());
        t.record_success("alice");
        assert!(t.check_at(t0, "alice", None).is_ok());
    }

    #[test]
    fn address_is_refused_for_the_window() {
        let t = LoginThrottle::new(1000, 2);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        t.record_failure_at(t0, "a", Some(ip));
        t.record_failure_at(t0, "b", Some(ip));
        assert!(t.check_at(t0, "c", Some(ip)).is_err());
        assert!(t
            .check_at(t0, "c", Some("10.0.0.2".parse().unwrap()))
            .is_ok());
        assert!(t.check_at(t0 + ADDRESS_WINDOW, "c", Some(ip)).is_ok());
    }
}
