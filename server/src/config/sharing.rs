//! `[sharing]`: how fast links may be read. A public link needs no account, so readings
//! (pages, files, copies) are bounded per client address and per link; past a bound the
//! answer is 429 with `Retry-After`.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[sharing]` in the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SharingSettings {
    /// Readings through links a minute from one client address (an IPv6 /64), all links
    /// together; 0: no limit.
    pub reads_per_minute_per_address: u32,
    /// Readings of one link a minute, all readers together; 0: no limit.
    pub reads_per_minute_per_link: u32,
}

impl Default for SharingSettings {
    fn default() -> Self {
        Self {
            reads_per_minute_per_address: 120,
            reads_per_minute_per_link: 600,
        }
    }
}

impl SharingSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (key, v) in [
            (
                "sharing.reads_per_minute_per_address",
                self.reads_per_minute_per_address,
            ),
            (
                "sharing.reads_per_minute_per_link",
                self.reads_per_minute_per_link,
            ),
        ] {
            if v > 1_000_000 {
                return Err(ConfigError::invalid(key, "must be 0..=1000000"));
            }
        }
        Ok(())
    }
}
