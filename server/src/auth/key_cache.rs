//! API keys seen lately in this process, so that a `/v1` turn does not spend a round trip on
//! its key before the turn's own first one. A key's hash always names the same key, owner,
//! expiry and scopes, so those are kept; what can change (the key revoked, the owner disabled) is
//! checked in the turn's first round trip instead ([`crate::turn::sql::Claim`]'s
//! `api_key`), on every replica alike.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Most keys kept; past that the cache starts over (a miss costs one lookup).
const MAX_ENTRIES: usize = 10_000;

/// What a key's first lookup in this process found.
#[derive(Debug, Clone)]
pub struct CachedKey {
    pub key_id: Uuid,
    pub user_id: Uuid,
    /// The owner's name and role as they were then (the turn's start reads them afresh).
    pub username: String,
    pub role: String,
    pub expires_at: Option<DateTime<Utc>>,
    /// Chosen at creation and never changed, so safe to keep.
    pub scopes: crate::domain::KeyScopes,
    /// When this process last recorded the key's use (or found it recorded).
    pub touched_at: Option<DateTime<Utc>>,
}

/// Keys by the SHA-256 of their secret.
#[derive(Default)]
pub struct KeyCache {
    entries: Mutex<HashMap<Vec<u8>, CachedKey>>,
}

impl KeyCache {
    pub fn get(&self, hash: &[u8]) -> Option<CachedKey> {
        self.entries.lock().ok()?.get(hash).cloned()
    }

    pub fn put(&self, hash: Vec<u8>, key: CachedKey) {
        if let Ok(mut m) = self.entries.lock() {
            if m.len() >= MAX_ENTRIES && !m.contains_key(&hash) {
                m.clear();
            }
            m.insert(hash, key);
        }
    }

    pub fn forget(&self, hash: &[u8]) {
        if let Ok(mut m) = self.entries.lock() {
            m.remove(hash);
        }
    }

    /// Whether the key's use is due to be recorded (last recorded before `now - every`); if
    /// so, it counts as recorded now, so concurrent calls write it once.
    pub fn touch_due(&self, hash: &[u8], now: DateTime<Utc>, every: chrono::Duration) -> bool {
        let Ok(mut m) = self.entries.lock() else {
            return false;
        };
        match m.get_mut(hash) {
            Some(k) if k.touched_at.is_none_or(|t| t < now - every) => {
                k.touched_at = Some(now);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CachedKey {
        CachedKey {
            key_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
            username: "u".into(),
            role: "member".into(),
            expires_at: None,
            scopes: crate::domain::KeyScopes::default(),
            touched_at: None,
        }
    }

    #[test]
    fn a_use_is_recorded_once_per_period_and_forgotten_keys_miss() {
        let cache = KeyCache::default();
        let now = Utc::now();
        let every = chrono::Duration::seconds(60);
        assert!(!cache.touch_due(b"h", now, every), "unknown key");
        cache.put(b"h".to_vec(), key());
        assert!(cache.touch_due(b"h", now, every));
        assert!(!cache.touch_due(b"h", now + chrono::Duration::seconds(30), every));
        assert!(cache.touch_due(b"h", now + chrono::Duration::seconds(61), every));
        cache.forget(b"h");
        assert!(cache.get(b"h").is_none());
    }

    #[test]
    fn a_full_cache_starts_over() {
        let cache = KeyCache::default();
        for i in 0..MAX_ENTRIES {
            cache.put(i.to_le_bytes().to_vec(), key());
        }
        assert!(cache.get(&0usize.to_le_bytes()).is_some());
        cache.put(b"one more".to_vec(), key());
        assert!(cache.get(&0usize.to_le_bytes()).is_none());
        assert!(cache.get(b"one more").is_some());
    }
}
