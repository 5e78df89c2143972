//! `[database]`: how to reach Postgres.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::serde_util::{millis, secs};
use super::ConfigError;

/// The default database: a local Postgres with trust auth.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/agentchat";

/// How to reach Postgres.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: DatabaseUrl,
    pub pool_size: usize,
    /// How long a request waits for a pooled connection before answering 503.
    #[serde(rename = "acquire_timeout_ms", with = "millis")]
    pub acquire_timeout: Duration,
    /// Create the database named in the URL when it does not exist.
    pub create_if_missing: bool,
    /// Turn starts that may wait for a connection at once (a burst queues rather than
    /// failing); past this many, a start is answered 503 with `Retry-After`.
    pub turn_start_queue: usize,
    /// How often budget holds of crashed processes are looked for (each look is one
    /// transaction, whether or not it finds any).
    #[serde(rename = "hold_sweep_secs", with = "secs")]
    pub hold_sweep_interval: Duration,
    /// The longest one statement of the request path may run before Postgres cancels it
    /// (the request then answers 503 `database_timeout`): no request can hold a
    /// connection and a backend for longer, whatever it asks for.
    #[serde(rename = "statement_timeout_ms", with = "millis")]
    pub statement_timeout: Duration,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::new(DEFAULT_DATABASE_URL),
            pool_size: 16,
            acquire_timeout: Duration::from_secs(2),
            create_if_missing: true,
            turn_start_queue: 20_000,
            hold_sweep_interval: Duration::from_secs(30),
            statement_timeout: Duration::from_secs(10),
        }
    }
}

impl DatabaseSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if url::Url::parse(self.url.expose()).is_err() {
            return Err(ConfigError::invalid(
                "database.url",
                "not a valid postgres:// URL",
            ));
        }
        if self.pool_size == 0 {
            return Err(ConfigError::invalid(
                "database.pool_size",
                "must be at least 1",
            ));
        }
        if self.turn_start_queue == 0 {
            return Err(ConfigError::invalid(
                "database.turn_start_queue",
                "must be at least 1",
            ));
        }
        if self.statement_timeout < Duration::from_millis(10) {
            return Err(ConfigError::invalid(
                "database.statement_timeout_ms",
                "must be at least 10",
            ));
        }
        if self.hold_sweep_interval.is_zero() {
            return Err(ConfigError::invalid(
                "database.hold_sweep_secs",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// A Postgres URL whose password is redacted in `Debug` and when shown.
#[derive(Clone)]
pub struct DatabaseUrl(SecretString);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(SecretString::from(url.into()))
    }

    /// The full URL, password included: only for opening connections.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// The URL with any password replaced, safe to log.
    pub fn redacted(&self) -> String {
        match url::Url::parse(self.expose()) {
            Ok(mut u) => {
                if u.password().is_some() {
                    let _ = u.set_password(Some("REDACTED"));
                }
                u.to_string()
            }
            Err(_) => "<unparseable database url>".to_owned(),
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for DatabaseUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for DatabaseUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}
