//! The proof of a signed access token, free of HTTP: the turn takes it without knowing how
//! a request carried it (the extractor is in `auth::extract`).

use uuid::Uuid;

/// A validly signed, unexpired access token not yet checked against the account. The one
/// hot route (sending a message) checks the account inside the turn's first database round
/// trip instead of spending one of its own; every other route takes
/// [`AuthUser`](super::AuthUser).
#[derive(Debug, Clone, Copy)]
pub struct SignedToken {
    pub user_id: Uuid,
    pub token_version: i32,
}
