//! Words every layer shares: the states of messages, turns and approvals as enums (mapped to
//! today's strings on the wire and in the database), a message's attachments, the local token estimate,
//! who acts, and the text rules Postgres imposes. Depends on nothing else in the crate.

mod attachment;
pub mod key_scopes;
pub mod pricing;
pub mod shown_url;
mod states;
pub mod text;
pub mod tokens;

pub use attachment::Attachment;
pub use key_scopes::{KeyScope, KeyScopes};
pub use shown_url::{scrub_urls, shown_url};
pub use states::{
    ApprovalState, Approver, Decision, MessageRole, MessageStatus, TurnState, UnknownState,
    ADMIN_ROLE, MEMBER_ROLE,
};
pub use text::{pg_safe_json, pg_safe_text};

/// Who made an admin change, as its audit row names them.
pub trait Actor {
    fn actor_id(&self) -> uuid::Uuid;
    fn actor_name(&self) -> &str;
}

/// The title of a conversation nobody has named yet.
pub const DEFAULT_TITLE: &str = "New conversation";
