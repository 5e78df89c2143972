//! Hardening settings and helpers shared by several routes: which proxies may name the
//! client address, refresh-session limits, upload concurrency and pace and the `Origin` check on
//! cookie-authenticated routes.

pub mod gate;
pub mod origin;
pub mod proxy;
pub mod text_guard;
pub mod upload_pace;

use std::time::Duration;

use crate::config::serde_util::secs;
use crate::config::ConfigError;

pub use proxy::{client_ip, IpNet};

/// `[security]` in the settings.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecuritySettings {
    /// Peers whose `X-Forwarded-For` is believed (reverse proxies); empty: nobody's.
    #[serde(with = "proxy::net_list")]
    pub trusted_proxies: Vec<IpNet>,
    /// A just-replaced refresh token presented again within this time (two tabs refreshing
    /// at once) gets a new token instead of revoking the session.
    #[serde(rename = "refresh_reuse_grace_secs", with = "secs")]
    pub refresh_reuse_grace: Duration,
    /// A sign-in session ends this long after the sign-in, however often it is refreshed.
    #[serde(rename = "session_max_lifetime_secs", with = "secs")]
    pub session_max_lifetime: Duration,
    /// Uploads buffered at once across all users; more are refused with 429.
    pub max_concurrent_uploads: usize,
    /// Uploads buffered at once by one user.
    pub max_concurrent_uploads_per_user: usize,
    /// Full-text searches running at once across all users (each user two at a time);
    /// more wait up to 2 s, then get 429. 0: half the CPUs, at least 1.
    #[serde(rename = "max_concurrent_searches")]
    pub concurrent_searches_setting: usize,
    /// An upload's whole body must arrive within this; past it the upload gets 408 and its
    /// slot goes to the next one.
    #[serde(rename = "upload_deadline_secs", with = "secs")]
    pub upload_deadline: Duration,
    /// After a 5 s grace, an upload slower than this on average gets 408 (0: no rate).
    pub upload_min_bytes_per_sec: u64,
    /// Origins (`https://chat.example.com`) besides the server's own that may call the
    /// cookie-authenticated routes.
    #[serde(deserialize_with = "origins")]
    pub allowed_origins: Vec<String>,
}

impl SecuritySettings {
    /// Searches at once: the setting, or half the CPUs (at least 1).
    pub fn max_concurrent_searches(&self) -> usize {
        match self.concurrent_searches_setting {
            0 => std::thread::available_parallelism()
                .map(|n| n.get() / 2)
                .unwrap_or(1)
                .max(1),
            n => n,
        }
    }
}

impl Default for SecuritySettings {
    fn default() -> Self {
        Self {
            trusted_proxies: Vec::new(),
            refresh_reuse_grace: Duration::from_secs(30),
            session_max_lifetime: Duration::from_secs(90 * 24 * 3600),
            max_concurrent_uploads: 8,
            max_concurrent_uploads_per_user: 2,
            concurrent_searches_setting: 0,
            upload_deadline: Duration::from_secs(300),
            upload_min_bytes_per_sec: 16 * 1024,
            allowed_origins: Vec::new(),
        }
    }
}

impl SecuritySettings {
    /// Refuses values the server must not start with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.upload_deadline.is_zero() {
            return Err(ConfigError::invalid(
                "security.upload_deadline_secs",
                "must be at least 1",
            ));
        }
        if self.session_max_lifetime.is_zero() {
            return Err(ConfigError::invalid(
                "security.session_max_lifetime_secs",
                "must be at least 1",
            ));
        }
        for (key, n) in [
            (
                "security.max_concurrent_uploads",
                self.max_concurrent_uploads,
            ),
            (
                "security.max_concurrent_uploads_per_user",
                self.max_concurrent_uploads_per_user,
            ),
        ] {
            if n == 0 {
                return Err(ConfigError::invalid(key, "must be at least 1"));
            }
        }
        Ok(())
    }
}

/// Origins compare without a trailing slash, case-insensitively.
fn origins<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(crate::config::serde_util::string_list(d)?
        .into_iter()
        .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
        .collect())
}
