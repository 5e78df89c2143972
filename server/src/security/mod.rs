//! Hardening settings and helpers shared by several routes: which proxies may name the
//! client address, refresh-session limits, upload concurrency and the `Origin` check on
//! cookie-authenticated routes.

pub mod origin;
pub mod proxy;
pub mod uploads;

use std::time::Duration;

use crate::config::ConfigError;

pub use proxy::{client_ip, IpNet};

/// Security settings (env `AGENTCHAT_TRUSTED_PROXIES`, `AGENTCHAT_REFRESH_REUSE_GRACE_SECS`,
/// `AGENTCHAT_SESSION_MAX_LIFETIME_SECS`, `AGENTCHAT_MAX_CONCURRENT_UPLOADS`,
/// `AGENTCHAT_MAX_CONCURRENT_UPLOADS_PER_USER`, `AGENTCHAT_ALLOWED_ORIGINS`).
#[derive(Debug, Clone)]
pub struct SecuritySettings {
    /// Peers whose `X-Forwarded-For` is believed (reverse proxies); empty: nobody's.
    pub trusted_proxies: Vec<IpNet>,
    /// A just-replaced refresh token presented again within this time (two tabs refreshing
    /// at once) gets a new token instead of revoking the session.
    pub refresh_reuse_grace: Duration,
    /// A sign-in session ends this long after the sign-in, however often it is refreshed.
    pub session_max_lifetime: Duration,
    /// Uploads buffered at once across all users; more are refused with 429.
    pub max_concurrent_uploads: usize,
    /// Uploads buffered at once by one user.
    pub max_concurrent_uploads_per_user: usize,
    /// Origins (`https://chat.example.com`) besides the server's own that may call the
    /// cookie-authenticated routes.
    pub allowed_origins: Vec<String>,
}

impl Default for SecuritySettings {
    fn default() -> Self {
        Self {
            trusted_proxies: Vec::new(),
            refresh_reuse_grace: Duration::from_secs(30),
            session_max_lifetime: Duration::from_secs(90 * 24 * 3600),
            max_concurrent_uploads: 8,
            max_concurrent_uploads_per_user: 2,
            allowed_origins: Vec::new(),
        }
    }
}

impl SecuritySettings {
    /// Applies the `AGENTCHAT_...` variables above from `env`.
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = env("AGENTCHAT_TRUSTED_PROXIES") {
            self.trusted_proxies = list(&v)
                .map(|p| {
                    p.parse().map_err(|e: String| ConfigError::Invalid {
                        name: "AGENTCHAT_TRUSTED_PROXIES",
                        reason: e,
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = number(&env, "AGENTCHAT_REFRESH_REUSE_GRACE_SECS")? {
            self.refresh_reuse_grace = Duration::from_secs(v);
        }
        if let Some(v) = number(&env, "AGENTCHAT_SESSION_MAX_LIFETIME_SECS")? {
            self.session_max_lifetime = Duration::from_secs(v.max(60));
        }
        if let Some(v) = number(&env, "AGENTCHAT_MAX_CONCURRENT_UPLOADS")? {
            self.max_concurrent_uploads = usize::try_from(v.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(v) = number(&env, "AGENTCHAT_MAX_CONCURRENT_UPLOADS_PER_USER")? {
            self.max_concurrent_uploads_per_user = usize::try_from(v.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(v) = env("AGENTCHAT_ALLOWED_ORIGINS") {
            self.allowed_origins = list(&v)
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect();
        }
        Ok(())
    }
}

fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn number(
    env: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u64>, ConfigError> {
    env(name)
        .map(|v| {
            v.trim().parse::<u64>().map_err(|e| ConfigError::Invalid {
                name,
                reason: e.to_string(),
            })
        })
        .transpose()
}
