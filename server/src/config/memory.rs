//! `[memory]`: how much a user's memory notes may hold. The notes go into every prompt of
//! the user's chats (under the system prompt), so their size is bounded in tokens and their
//! tokens are part of each call's budget estimate.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[memory]` in the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySettings {
    /// Most notes one user keeps.
    pub max_notes: usize,
    /// Longest note, in characters.
    pub max_note_chars: usize,
    /// Most tokens all of one user's notes take together in a prompt.
    pub max_total_tokens: u64,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            max_notes: 50,
            max_note_chars: 500,
            max_total_tokens: 1_000,
        }
    }
}

impl MemorySettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| Err(ConfigError::invalid(key, reason));
        if !(1..=1_000).contains(&self.max_notes) {
            return bad("memory.max_notes", "must be 1..=1000");
        }
        if !(1..=10_000).contains(&self.max_note_chars) {
            return bad("memory.max_note_chars", "must be 1..=10000");
        }
        if !(1..=100_000).contains(&self.max_total_tokens) {
            return bad("memory.max_total_tokens", "must be 1..=100000");
        }
        Ok(())
    }
}
