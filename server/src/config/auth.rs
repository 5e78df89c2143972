//! `[auth]`: accounts and tokens.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::serde_util::{secret, secs};
use super::ConfigError;

/// Minimum length of a configured JWT signing secret.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// Accounts and tokens.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// `None`: a random secret is generated once and kept in the database.
    #[serde(with = "secret")]
    pub jwt_secret: Option<SecretString>,
    pub registration: Registration,
    #[serde(rename = "access_token_ttl_secs", with = "secs")]
    pub access_token_ttl: Duration,
    #[serde(rename = "refresh_token_ttl_secs", with = "secs")]
    pub refresh_token_ttl: Duration,
    /// Password hashes computed at once; more wait (argon2 needs ~19 MiB each).
    /// 0: the number of CPUs (at least 2).
    #[serde(rename = "max_concurrent_hashes")]
    pub concurrent_hashes_setting: usize,
    /// Failed logins for one account before it is slowed down.
    pub account_failure_limit: u32,
    /// Failed logins from one client address per window before it is refused.
    pub address_failure_limit: u32,
    /// Mark the browser's refresh-token cookie `Secure` (browsers accept it on localhost).
    pub cookie_secure: bool,
    /// Days a new API key lasts when its creator names no expiry.
    pub api_key_default_days: u32,
    /// Most days an API key may last: no key lives longer, whatever is asked.
    pub api_key_max_days: u32,
    /// How recent a sign-in must be (seconds) to create an API key without confirming the
    /// password again: a stolen access token cannot mint long-lived keys.
    pub reauth_secs: u64,
    /// Seals the provider keys the admin API stores (AES-256-GCM; 32 bytes in base64,
    /// e.g. `openssl rand -base64 32`). Unset: they are stored in clear, as the start log
    /// says. Changed with `agentchat secrets rotate --from OLD`.
    #[serde(with = "secret")]
    pub secret_key: Option<SecretString>,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            jwt_secret: None,
            registration: Registration::Open,
            access_token_ttl: Duration::from_secs(15 * 60),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            concurrent_hashes_setting: 0,
            account_failure_limit: 5,
            address_failure_limit: 30,
            cookie_secure: true,
            api_key_default_days: 90,
            api_key_max_days: 365,
            reauth_secs: 300,
            secret_key: None,
        }
    }
}

impl AuthSettings {
    /// Password hashes computed at once: the setting, or the number of CPUs (at least 2).
    pub fn max_concurrent_hashes(&self) -> usize {
        match self.concurrent_hashes_setting {
            0 => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .max(2),
            n => n,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(key) = &self.secret_key {
            use base64::Engine as _;
            let bytes =
                base64::engine::general_purpose::STANDARD.decode(key.expose_secret().trim());
            if bytes.map(|b| b.len()) != Ok(32) {
                return Err(ConfigError::invalid(
                    "auth.secret_key",
                    "must be 32 bytes in base64; generate one with `openssl rand -base64 32`",
                ));
            }
        }
        if let Some(secret) = &self.jwt_secret {
            if secret.expose_secret().len() < MIN_JWT_SECRET_BYTES {
                return Err(ConfigError::invalid(
                    "auth.jwt_secret",
                    format!(
                        "the JWT secret must be at least {MIN_JWT_SECRET_BYTES} bytes long; \
                         generate one with `openssl rand -base64 48`, or leave it unset to let \
                         the server generate and store one"
                    ),
                ));
            }
        }
        if self.api_key_default_days == 0 || self.api_key_default_days > self.api_key_max_days {
            return Err(ConfigError::invalid(
                "auth.api_key_default_days",
                "must be at least 1 and at most auth.api_key_max_days",
            ));
        }
        if self.api_key_max_days > 3650 {
            return Err(ConfigError::invalid(
                "auth.api_key_max_days",
                "must be at most 3650 (ten years)",
            ));
        }
        for (key, ttl) in [
            ("auth.access_token_ttl_secs", self.access_token_ttl),
            ("auth.refresh_token_ttl_secs", self.refresh_token_ttl),
        ] {
            if ttl.is_zero() {
                return Err(ConfigError::invalid(key, "must be at least 1"));
            }
        }
        Ok(())
    }
}

/// Whether anyone may create an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    Open,
    Closed,
}
