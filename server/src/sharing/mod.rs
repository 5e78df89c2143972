//! Sharing a conversation (DESIGN §14). A share is a link to a read-only *snapshot* of one of
//! its owner's conversations: the messages up to the last one when the link was made
//! (`snapshot_seq`), never the ones written after. Its id is the link's secret (16 random
//! bytes), so knowing the URL is what grants reading; `org` links also need a signed-in
//! account of this server, `public` ones nothing — and only roles an admin allowed
//! (`roles.can_share_public`) may make them. Links expire, are revoked, may hide the tools'
//! arguments and outputs. Every reading is counted — one `share_views` row per link, viewer,
//! action and minute — in the reading's own transaction (a view that cannot be recorded is
//! not served), and readings are bounded per client address and per link (`gate`).
//!
//! Forking copies a conversation (one's own, or a share one may read) up to a message into a
//! new conversation of the caller's, so a reader can go on from there with the model.
//!
//! One job per file: `create`, `manage` (list, change, revoke), `read` (the checks every
//! reading passes, a page of the snapshot), `views` (the counted audit), `gate` (the rate of
//! readings), `files` (attached files through a link), `fork` (and `fork_files`: what a
//! copy from another user keeps of the files), `redact`, `policy` (who may share publicly),
//! `model` (the rows and their API shape).

pub mod create;
pub mod error;
pub mod files;
pub mod fork;
mod fork_files;
pub mod gate;
pub mod manage;
pub mod model;
pub mod policy;
pub mod read;
pub mod redact;
mod token;
pub mod views;

pub use error::SharingError;
pub use gate::ReadGate;
pub use model::{Scope, ShareInfo, ShareState};
pub use read::{Page, Viewer};
pub use token::looks_like_share_id;
pub use views::AdminReader;

/// Who asks, as the sharing rules need to know them.
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    pub id: uuid::Uuid,
    /// Admins may revoke anyone's link (a governance action, recorded in the admin trail).
    pub admin: bool,
}
