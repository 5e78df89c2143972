//! Durable turns' settings: when a silent process's turns are ended, how long shutdown
//! waits for running turns, how long a call waits for its approval.

use std::time::Duration;

/// `[durable]` in the settings: replica liveness and the shutdown drain.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DurableSettings {
    /// A process whose heartbeat is older than this is dead: its turns are ended.
    #[serde(rename = "replica_timeout_secs", with = "super::serde_util::secs")]
    pub replica_timeout: Duration,
    /// On SIGTERM, running turns get this long to finish before they are stopped.
    #[serde(rename = "shutdown_grace_secs", with = "super::serde_util::secs")]
    pub shutdown_grace: Duration,
    /// A tool call waiting for approval longer than this expires: it does not run, and the
    /// model is told so.
    #[serde(rename = "approval_ttl_secs", with = "super::serde_util::secs")]
    pub approval_ttl: Duration,
}

impl DurableSettings {
    /// Refuses a zero replica timeout (every process would look dead at once).
    pub fn validate(&self) -> Result<(), super::ConfigError> {
        if self.replica_timeout.is_zero() {
            return Err(super::ConfigError::invalid(
                "durable.replica_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.approval_ttl.is_zero() {
            return Err(super::ConfigError::invalid(
                "durable.approval_ttl_secs",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

impl Default for DurableSettings {
    fn default() -> Self {
        Self {
            replica_timeout: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(20),
            approval_ttl: Duration::from_secs(86_400),
        }
    }
}
