//! Why an account or session operation refused, in the domain's words: the HTTP boundary
//! decides statuses and codes ([`crate::error`]).

use crate::db::DbError;

/// A refused sign-up, sign-in, refresh or password change.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("username must be 3 to 32 characters: letters, digits, `_`, `-` or `.`")]
    InvalidUsername,
    /// The password's length is out of bounds: the message says which bound.
    #[error("{0}")]
    InvalidPassword(String),
    #[error("no role named `{0}`")]
    UnknownRole(String),
    #[error("that username is already taken")]
    UsernameTaken,
    /// Too many failed attempts for this name or client.
    #[error("{message}")]
    Throttled {
        message: &'static str,
        retry_after_secs: u64,
    },
    /// Unknown user, wrong password or disabled account: one answer for all three.
    #[error("invalid username or password")]
    BadCredentials,
    #[error("invalid or expired refresh token")]
    BadRefreshToken,
    #[error("this account no longer exists")]
    AccountGone,
    #[error("this account signs in through single sign-on; its password is managed by the identity provider")]
    ExternalAccount,
    /// The caller's session is fine, only the current password given is not.
    #[error("the current password is not correct")]
    WrongPassword,
    #[error(transparent)]
    Db(#[from] DbError),
    /// Hashing or signing failed: a bug or a broken machine.
    #[error("internal: {0}")]
    Internal(anyhow::Error),
}

impl AuthError {
    pub fn internal(e: impl Into<anyhow::Error>) -> Self {
        Self::Internal(e.into())
    }
}

impl From<diesel::result::Error> for AuthError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Db(e.into())
    }
}

impl From<crate::db::PoolError> for AuthError {
    fn from(e: crate::db::PoolError) -> Self {
        Self::Db(e.into())
    }
}
