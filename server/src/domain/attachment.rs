//! A file attached to a user message, as the message stores it.

use serde::{Deserialize, Serialize};

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attachment {
    /// `/`-separated, relative to the sender's workspace.
    pub path: String,
    /// Its size when the message was sent.
    pub bytes: u64,
    /// The SHA-256 of its content when the message was sent (lowercase hex), so a link
    /// serves only that file, never one replaced since. Absent on messages stored before
    /// digests were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}
