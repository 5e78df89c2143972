//! Every way a sharing request can be refused; `crate::error` maps them to HTTP.

/// Why a share or fork request did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SharingError {
    /// No such object, or not the caller's (the two look the same).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The link was revoked, has expired, or its owner can no longer share it.
    #[error("this shared conversation is no longer available: {0}")]
    Gone(String),
    /// An `org` link read without signing in.
    #[error("this conversation is shared with the members of this server: sign in to read it")]
    SignInRequired,
    /// A `public` link asked for by a role that may not make them.
    #[error(
        "your role may not share conversations publicly; share it with your organisation, \
         or ask an admin"
    )]
    PublicNotAllowed,
    #[error("{0}")]
    InvalidExpiry(String),
    /// A change that changes nothing.
    #[error("send at least one of redact_tools, expires_at")]
    NothingToChange,
    #[error("the conversation has no messages yet: there is nothing to share")]
    NothingToShare,
    /// `at_message_id` is not a user or assistant message of the conversation (or snapshot).
    #[error("{0}")]
    InvalidForkPoint(String),
    #[error("{0}")]
    Limit(String),
    /// The attached file is no longer the one the message was sent with.
    #[error("the file was changed or removed after the conversation was shared")]
    FileChanged,
    /// Too many readings from one address, or of one link, in the last minute.
    #[error("too many readings of shared conversations {}; try again in {} s", by_what(.0.by), .0.retry_after.as_secs().max(1))]
    RateLimited(super::gate::Refusal),
    /// The owner's workspace could not be read (details logged, not shown).
    #[error("workspace storage error: {0}")]
    Storage(String),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
    #[error("the database is unavailable: {0}")]
    Pool(String),
}

impl From<crate::db::PoolError> for SharingError {
    fn from(e: crate::db::PoolError) -> Self {
        SharingError::Pool(e.to_string())
    }
}

fn by_what(by: &str) -> &'static str {
    if by == "link" {
        "through this link"
    } else {
        "from your address"
    }
}
