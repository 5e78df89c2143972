//! A file attached to a user message, as the message stores it.

use serde::{Deserialize, Serialize};

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attachment {
    /// `/`-separated, relative to the sender's workspace.
    pub path: String,
    /// Its size when the message was sent.
    pub bytes: u64,
}
