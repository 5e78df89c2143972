//! A bound on readings through links — pages, files, copies — per client address and per
//! link, so that nobody (a public link needs no account) can make the server read and send
//! a shared conversation as fast as they can ask. Each key is a smooth rate (GCRA): `limit`
//! readings a minute, up to `limit` of them at once; past it, the answer is 429 with the
//! time until the next reading is allowed.
//!
//! In process (per replica, as the sign-in throttle): the address is checked before the
//! database is asked anything, so a refused reading costs no connection. Both maps are
//! capped: keys are forgotten a minute after their last reading, and when a map is full of
//! live keys a new key passes unremembered rather than locking everyone out (the other
//! bound still holds). An IPv6 client is counted by its /64, which one subscriber holds.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The period the limits are counted over.
const PERIOD: Duration = Duration::from_secs(60);
/// Most keys each map remembers (a few MB at most).
pub const MAX_KEYS: usize = 100_000;

/// Why a reading was refused, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// What was over its limit: `"address"` or `"link"`.
    pub by: &'static str,
    pub retry_after: Duration,
}

/// One rate per key: each key's theoretical arrival time.
struct Rate<K> {
    /// Readings a minute; 0: no limit.
    limit: u32,
    keys: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq> Rate<K> {
    fn new(limit: u32) -> Self {
        Self {
            limit,
            keys: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one reading of `key` at `now`, or says how long until one is allowed.
    fn take(&self, key: K, now: Instant) -> Result<(), Duration> {
        if self.limit == 0 {
            return Ok(());
        }
        let interval = PERIOD / self.limit;
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.contains_key(&key) && keys.len() >= MAX_KEYS {
            keys.retain(|_, tat| *tat > now);
            if keys.len() >= MAX_KEYS {
                return Ok(());
            }
        }
        let tat = keys.get(&key).map_or(now, |t| (*t).max(now));
        let next = tat + interval;
        let ahead = next.duration_since(now);
        if ahead > PERIOD {
            return Err(ahead - PERIOD);
        }
        keys.insert(key, next);
        Ok(())
    }

    fn len(&self) -> usize {
        self.keys.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// The bounds on readings through links.
pub struct ReadGate {
    addresses: Rate<IpAddr>,
    links: Rate<String>,
}

impl ReadGate {
    /// `per_address` and `per_link` readings a minute (0: no limit).
    pub fn new(per_address: u32, per_link: u32) -> Self {
        Self {
            addresses: Rate::new(per_address),
            links: Rate::new(per_link),
        }
    }

    /// Counts a reading from `address` (unknown: not counted by address).
    pub fn admit_address(&self, address: Option<&str>) -> Result<(), Refusal> {
        self.admit_address_at(address, Instant::now())
    }

    /// Counts a reading of link `id` (checked to exist, so only real links are remembered).
    pub fn admit_link(&self, id: &str) -> Result<(), Refusal> {
        self.admit_link_at(id, Instant::now())
    }

    fn admit_address_at(&self, address: Option<&str>, now: Instant) -> Result<(), Refusal> {
        let Some(ip) = address.and_then(|a| a.parse::<IpAddr>().ok()) else {
            return Ok(());
        };
        self.addresses
            .take(subscriber(ip), now)
            .map_err(|retry_after| Refusal {
                by: "address",
                retry_after,
            })
    }

    fn admit_link_at(&self, id: &str, now: Instant) -> Result<(), Refusal> {
        self.links
            .take(id.to_owned(), now)
            .map_err(|retry_after| Refusal {
                by: "link",
                retry_after,
            })
    }

    /// How many addresses and links are remembered.
    pub fn sizes(&self) -> (usize, usize) {
        (self.addresses.len(), self.links.len())
    }
}

/// The key an address is counted under: itself, or its /64 for IPv6.
fn subscriber(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_the_limit_passes_then_readings_come_at_the_rate() {
        let gate = ReadGate::new(6, 0);
        let t0 = Instant::now();
        let a = Some("192.0.2.1");
        for _ in 0..6 {
            assert!(gate.admit_address_at(a, t0).is_ok());
        }
        let refused = gate.admit_address_at(a, t0).unwrap_err();
        assert_eq!(refused.by, "address");
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        // Another address is not held back; ten seconds later one more reading passes.
        assert!(gate.admit_address_at(Some("192.0.2.2"), t0).is_ok());
        assert!(gate
            .admit_address_at(a, t0 + Duration::from_secs(10))
            .is_ok());
        assert!(gate
            .admit_address_at(a, t0 + Duration::from_secs(10))
            .is_err());
        // Unknown addresses and a limit of 0 are not counted.
        assert!(gate.admit_address_at(None, t0).is_ok());
        for _ in 0..100 {
            assert!(gate.admit_link_at("link", t0).is_ok());
        }
    }

    #[test]
    fn ipv6_counts_by_its_slash_64() {
        let gate = ReadGate::new(1, 0);
        let t0 = Instant::now();
        assert!(gate.admit_address_at(Some("2001:db8::1"), t0).is_ok());
        assert!(gate.admit_address_at(Some("2001:db8::ffff:2"), t0).is_err());
        assert!(gate.admit_address_at(Some("2001:db8:0:1::1"), t0).is_ok());
    }

    #[test]
    fn a_full_map_forgets_idle_keys_and_never_grows_past_its_cap() {
        let gate = ReadGate::new(0, 1);
        let t0 = Instant::now();
        for i in 0..MAX_KEYS {
            assert!(gate.admit_link_at(&i.to_string(), t0).is_ok());
        }
        assert_eq!(gate.sizes().1, MAX_KEYS);
        // Full of live keys: a new one passes but is not remembered.
        assert!(gate.admit_link_at("new", t0).is_ok());
        assert_eq!(gate.sizes().1, MAX_KEYS);
        assert!(gate.admit_link_at("0", t0).is_err());
        // A minute on, the idle keys make room.
        let later = t0 + PERIOD + Duration::from_secs(1);
        assert!(gate.admit_link_at("new", later).is_ok());
        assert_eq!(gate.sizes().1, 1);
    }
}
