//! Assistants: named, versioned presets of instructions, model, tools, knowledge
//! collections and parameters that an admin keeps and users start chats with (DESIGN §14).
//! A preset only ever narrows: the tools a chat may use are the preset's ∩ the user's role,
//! and its collections are searched only where the user may read them.

pub mod spec;
pub mod store;

pub use spec::{AssistantParams, AssistantSpec, Invalid};
pub use store::{Assistant, AssistantVersion};

/// Prefix of an assistant's model name on `/v1` (`assistant:<name>`).
pub const API_MODEL_PREFIX: &str = "assistant:";
