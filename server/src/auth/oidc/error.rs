//! Why a single sign-on did not end signed in: what the log records and what the person in
//! front of the browser is told (never the provider's raw text, never internals).

use actix_web::http::StatusCode;

/// A failed sign-in.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("single sign-on is not configured")]
    NotConfigured,
    /// Discovery failed, or named another issuer.
    #[error("provider discovery failed: {0}")]
    Discovery(String),
    /// The provider sent the browser back with an OAuth error (`access_denied`, ...).
    #[error("the provider answered `{0}`")]
    Provider(String),
    /// No, an expired, a foreign or a tampered login-state cookie, or a `state` that does
    /// not match it.
    #[error("the sign-in state does not match this browser's sign-in")]
    BadState,
    #[error("the authorization code could not be redeemed: {0}")]
    TokenExchange(String),
    #[error("the ID token was refused: {0}")]
    InvalidIdToken(String),
    #[error("none of the user's groups is mapped to a role")]
    NoMatchingGroup,
    #[error("the role map names role `{0}`, which does not exist")]
    UnknownRole(String),
    #[error("the account is disabled")]
    Disabled,
    #[error("the new role would leave no enabled admin")]
    LastAdmin,
    #[error("database: {0}")]
    Internal(String),
}

impl SsoError {
    /// Status, a stable code and the sentence shown on the error page.
    pub fn public(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            Self::NotConfigured => (
                StatusCode::NOT_FOUND,
                "sso_not_configured",
                "Single sign-on is not set up on this server.",
            ),
            Self::Discovery(_) => (
                StatusCode::BAD_GATEWAY,
                "provider_unavailable",
                "The identity provider could not be reached or is misconfigured. Try again later, or tell your administrator.",
            ),
            Self::Provider(code) if code == "access_denied" => (
                StatusCode::FORBIDDEN,
                "access_denied",
                "Sign-in was cancelled or access was denied at the identity provider.",
            ),
            Self::Provider(_) => (
                StatusCode::BAD_GATEWAY,
                "provider_error",
                "The identity provider reported an error and did not sign you in.",
            ),
            Self::BadState => (
                StatusCode::BAD_REQUEST,
                "invalid_state",
                "This sign-in could not be matched to one started in this browser (it may have expired or been tampered with). Start again.",
            ),
            Self::TokenExchange(_) => (
                StatusCode::BAD_GATEWAY,
                "token_exchange_failed",
                "The identity provider did not confirm this sign-in. Start again.",
            ),
            Self::InvalidIdToken(_) => (
                StatusCode::UNAUTHORIZED,
                "invalid_id_token",
                "The identity provider's answer could not be verified, so you were not signed in.",
            ),
            Self::NoMatchingGroup => (
                StatusCode::FORBIDDEN,
                "no_matching_group",
                "Your account is not in a group that may use AgentChat. Ask your administrator for access.",
            ),
            Self::UnknownRole(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "role_map_misconfigured",
                "Single sign-on is misconfigured on this server (the role map names a role that does not exist). Tell your administrator.",
            ),
            Self::Disabled => (
                StatusCode::FORBIDDEN,
                "account_disabled",
                "This account is disabled.",
            ),
            Self::LastAdmin => (
                StatusCode::CONFLICT,
                "last_admin",
                "Your groups no longer make you an admin, but you are the last one: ask another admin to take over first.",
            ),
            Self::Internal(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Sign-in is unavailable right now. Try again in a moment.",
            ),
        }
    }
}

impl From<diesel::result::Error> for SsoError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<crate::db::DbError> for SsoError {
    fn from(e: crate::db::DbError) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<crate::auth::AuthError> for SsoError {
    fn from(e: crate::auth::AuthError) -> Self {
        Self::Internal(e.to_string())
    }
}
