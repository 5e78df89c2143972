//! `[sandbox]`: the code interpreter's jail (DESIGN §15). Defaults are safe for a shared
//! server: a minute of time, 1 GiB of memory, 64 processes, a few files out. Roles may only
//! tighten them. The tmpfs sizes are memory too: a jail may hold `tmp_mb` twice (`/tmp`
//! and `/dev/shm`) and `data_mb` besides what its processes allocate.

use std::path::PathBuf;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Longest wall time a run may be given.
pub const MAX_TIMEOUT_SECS: u64 = 300;

/// `[sandbox]` in the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// The tool exists when a jail can be made here (roles must still be granted it);
    /// false: never, whatever the host offers.
    pub enabled: bool,
    /// bubblewrap, the jail maker.
    pub bwrap: PathBuf,
    /// The interpreter inside the jail; must live under `/usr` (the only tree the jail sees).
    pub python: PathBuf,
    /// Wall time of one run, and its default CPU time (1..=300).
    pub timeout_secs: u64,
    /// Memory of each process in the jail.
    pub memory_mb: u64,
    /// Processes (and threads) in one jail.
    pub max_processes: u32,
    /// Size of the jail's `/tmp`.
    pub tmp_mb: u64,
    /// Size of `/mnt/data` (what the code writes there, outputs included).
    pub data_mb: u64,
    /// Bytes of stdout kept, and of stderr: head and tail, with a marker between.
    pub max_output_bytes: usize,
    /// Files taken from `/mnt/data/outputs` per run.
    pub max_files: u32,
    /// Largest file taken from `/mnt/data/outputs`.
    pub max_file_bytes: u64,
    /// Jails running at once on this replica.
    pub max_concurrent: u32,
    /// Jails running at once for one user.
    pub max_concurrent_per_user: u32,
    /// Price of one CPU hour in the jail, an exact decimal written as a string; "0": free.
    #[serde(deserialize_with = "super::catalogue::exact")]
    pub price_per_cpu_hour: Decimal,
    /// ISO 4217 code of the price.
    pub currency: String,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            python: PathBuf::from("/usr/bin/python3"),
            timeout_secs: 60,
            memory_mb: 1024,
            max_processes: 64,
            tmp_mb: 128,
            data_mb: 256,
            max_output_bytes: 64 * 1024,
            max_files: 20,
            max_file_bytes: 10 * 1024 * 1024,
            max_concurrent: 4,
            max_concurrent_per_user: 1,
            price_per_cpu_hour: Decimal::ZERO,
            currency: "USD".to_owned(),
        }
    }
}

impl SandboxSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| Err(ConfigError::invalid(key, reason));
        if !self.python.is_absolute() {
            return bad("sandbox.python", "must be an absolute path");
        }
        if !self.bwrap.is_absolute() {
            return bad("sandbox.bwrap", "must be an absolute path");
        }
        if !(1..=MAX_TIMEOUT_SECS).contains(&self.timeout_secs) {
            return bad("sandbox.timeout_secs", "must be 1..=300");
        }
        if !(64..=65_536).contains(&self.memory_mb) {
            return bad("sandbox.memory_mb", "must be 64..=65536");
        }
        if !(4..=4096).contains(&self.max_processes) {
            return bad("sandbox.max_processes", "must be 4..=4096");
        }
        if !(1..=65_536).contains(&self.tmp_mb) {
            return bad("sandbox.tmp_mb", "must be 1..=65536");
        }
        if !(1..=65_536).contains(&self.data_mb) {
            return bad("sandbox.data_mb", "must be 1..=65536");
        }
        if !(1024..=16 * 1024 * 1024).contains(&self.max_output_bytes) {
            return bad("sandbox.max_output_bytes", "must be 1024..=16777216");
        }
        if !(1..=1000).contains(&self.max_files) {
            return bad("sandbox.max_files", "must be 1..=1000");
        }
        if !(1..=1024 * 1024 * 1024).contains(&self.max_file_bytes) {
            return bad("sandbox.max_file_bytes", "must be 1..=1073741824");
        }
        if !(1..=1024).contains(&self.max_concurrent) {
            return bad("sandbox.max_concurrent", "must be 1..=1024");
        }
        if !(1..=self.max_concurrent).contains(&self.max_concurrent_per_user) {
            return bad(
                "sandbox.max_concurrent_per_user",
                "must be 1..=sandbox.max_concurrent",
            );
        }
        if self.price_per_cpu_hour.is_sign_negative() {
            return bad("sandbox.price_per_cpu_hour", "must not be negative");
        }
        let code =
            self.currency.len() == 3 && self.currency.chars().all(|c| c.is_ascii_uppercase());
        if !code {
            return bad("sandbox.currency", "must be an ISO 4217 code such as USD");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_bad_values_are_named() {
        assert!(SandboxSettings::default().validate().is_ok());
        let s = SandboxSettings {
            timeout_secs: 301,
            ..SandboxSettings::default()
        };
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("sandbox.timeout_secs"), "{err}");
        let s = SandboxSettings {
            max_concurrent: 2,
            max_concurrent_per_user: 3,
            ..SandboxSettings::default()
        };
        assert!(s.validate().is_err());
        let s = SandboxSettings {
            price_per_cpu_hour: Decimal::new(-1, 2),
            ..SandboxSettings::default()
        };
        assert!(s.validate().is_err());
    }
}
