//! Account and session operations behind the auth routes: sign-up, sign-in, token refresh
//! and sign-out.

use std::net::IpAddr;

use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use secrecy::SecretString;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::error::AuthError;
use crate::auth::{password, refresh, AuthUser};
use crate::db::models::admin_change::{self, NewChange};
use crate::db::models::{refresh_token, role, user};
use crate::db::{self, models::is_unique_violation};
use crate::state::AppState;

/// What a successful sign-in or refresh returns.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenPair {
    pub access_token: String,
    /// Absent when the session is kept in the cookie (`"session": "cookie"`).
    #[schema(required = false)]
    pub refresh_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
}

/// Usernames: 3 to 32 of letters, digits, `_`, `-`, `.`; compared case-insensitively.
pub fn check_username(username: &str) -> Result<(), AuthError> {
    let ok_len = (3..=32).contains(&username.chars().count());
    let ok_chars = username
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok_len && ok_chars {
        Ok(())
    } else {
        Err(AuthError::InvalidUsername)
    }
}

/// Which role a new account gets.
pub enum NewAccountRole<'a> {
    /// Self-registration: `admin` for the very first account, `member` after.
    SelfRegistered,
    /// Chosen by an admin (must exist); the creation enters the admin audit trail.
    ByAdmin { role: &'a str, admin: &'a AuthUser },
}

/// Validates and creates an account.
pub async fn create_account(
    state: &AppState,
    username: &str,
    password_text: &str,
    role_choice: NewAccountRole<'_>,
) -> Result<user::User, AuthError> {
    check_username(username)?;
    password::check_length(password_text).map_err(|m| AuthError::InvalidPassword(m.to_string()))?;
    if let NewAccountRole::ByAdmin { role: name, .. } = role_choice {
        let mut conn = db::conn(&state.pool).await?;
        if !role::exists(&mut conn, name).await? {
            return Err(AuthError::UnknownRole(name.to_owned()));
        }
    }
    let hash = state
        .hasher
        .hash(SecretString::from(password_text.to_owned()))
        .await
        .map_err(AuthError::internal)?;
    let mut conn = db::conn(&state.pool).await?;
    let inserted = match role_choice {
        NewAccountRole::SelfRegistered => {
            user::insert_self_registered(&mut conn, username, &hash, role::MEMBER).await
        }
        NewAccountRole::ByAdmin { role: name, admin } => {
            conn.transaction(|conn| {
                async move {
                    let created = user::insert(conn, username, &hash, name).await?;
                    let change = NewChange::by(admin, "user.create", &created.username)
                        .id(created.id)
                        .after(user::UserView::from(created.clone()));
                    admin_change::record(conn, change).await?;
                    Ok(created)
                }
                .scope_boxed()
            })
            .await
        }
    };
    inserted.map_err(|e| {
        if is_unique_violation(&e) {
            AuthError::UsernameTaken
        } else {
            e.into()
        }
    })
}

/// Longest username or password (in bytes) a sign-in looks at; anything longer is refused
/// before it reaches the throttle or the hasher.
pub(super) const MAX_LOGIN_FIELD_BYTES: usize = 4 * password::MAX_PASSWORD_CHARS;

/// Checks the password and opens a session. Unknown users, wrong passwords and disabled
/// accounts get the same answer after the same work; every attempt is counted by the
/// throttle before the password is hashed.
pub async fn login(
    state: &AppState,
    username: &str,
    password_text: &str,
    client: Option<IpAddr>,
) -> Result<TokenPair, AuthError> {
    check_username(username)?;
    if password_text.len() > MAX_LOGIN_FIELD_BYTES {
        return Err(AuthError::InvalidPassword(format!(
            "password must be at most {} characters",
            password::MAX_PASSWORD_CHARS
        )));
    }
    if let Err(wait) = state.throttle.begin(username, client) {
        return Err(AuthError::Throttled {
            message: "too many failed sign-in attempts; wait a moment and try again",
            retry_after_secs: wait.as_secs() + 1,
        });
    }
    let found = {
        let mut conn = db::conn(&state.pool).await?;
        user::find_by_username(&mut conn, username).await?
    };
    let ok = state
        .hasher
        .verify(
            SecretString::from(password_text.to_owned()),
            found.as_ref().map(|u| u.password_hash.clone()),
        )
        .await
        .map_err(AuthError::internal)?;
    // A disabled account answers as a wrong password would: the 401 confirms nothing.
    let account = match found {
        Some(u) if ok && !u.disabled => u,
        _ => return Err(AuthError::BadCredentials),
    };
    state.throttle.succeeded(username, client);
    open_session(state, &account).await
}

/// Opens a session (a new refresh-token family, signed in now) for an account that proved
/// who it is: by password, or another way (single sign-on).
pub async fn open_session(state: &AppState, account: &user::User) -> Result<TokenPair, AuthError> {
    let mut conn = db::conn(&state.pool).await?;
    let refresh_token = new_refresh_token(state, &mut conn, account.id, Uuid::new_v4()).await?;
    token_pair(
        state,
        account.id,
        account.token_version,
        refresh_token,
        chrono::Utc::now(),
    )
}

/// Exchanges a refresh token for a new pair; the old one is spent. Presenting a spent
/// token revokes every token of its family.
pub async fn refresh_session(state: &AppState, presented: &str) -> Result<TokenPair, AuthError> {
    let token_hash = refresh::hash(presented);
    let mut conn = db::conn(&state.pool).await?;
    let ttl = state.settings.auth.refresh_token_ttl;
    let security = &state.settings.security;
    let (grace, lifetime) = (security.refresh_reuse_grace, security.session_max_lifetime);
    let outcome = conn
        .transaction(|conn| {
            async move {
                let refresh_token::Consumed::Fresh {
                    user_id,
                    family_id,
                    started,
                } = refresh_token::consume(conn, &token_hash, grace).await?
                else {
                    return Ok(None);
                };
                let Some(account) = user::find(conn, user_id).await? else {
                    return Ok(None);
                };
                // Sliding expiry, capped by the session's absolute lifetime.
                let now = chrono::Utc::now();
                let end = started + to_chrono(lifetime);
                if account.disabled || now >= end {
                    return Ok(None);
                }
                let next = refresh::generate();
                let expires = (now + to_chrono(ttl)).min(end);
                refresh_token::insert(conn, user_id, family_id, &refresh::hash(&next), expires)
                    .await?;
                Ok(Some((account, next, started)))
            }
            .scope_boxed()
        })
        .await
        .map_err(|e: diesel::result::Error| AuthError::from(e))?;
    let (account, next, signed_in_at) = outcome.ok_or(AuthError::BadRefreshToken)?;
    token_pair(state, account.id, account.token_version, next, signed_in_at)
}

pub(super) fn to_chrono(d: std::time::Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::days(30))
}

/// Ends the session the refresh token belongs to. Unknown tokens are not an error.
pub async fn logout(state: &AppState, presented: &str) -> Result<(), AuthError> {
    let mut conn = db::conn(&state.pool).await?;
    refresh_token::revoke_by_hash(&mut conn, &refresh::hash(presented)).await?;
    Ok(())
}

async fn new_refresh_token(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    user_id: Uuid,
    family_id: Uuid,
) -> Result<String, AuthError> {
    let token = refresh::generate();
    let expires = chrono::Utc::now()
        + chrono::Duration::from_std(state.settings.auth.refresh_token_ttl)
            .unwrap_or(chrono::Duration::days(30));
    refresh_token::insert(conn, user_id, family_id, &refresh::hash(&token), expires).await?;
    Ok(token)
}

pub(super) fn token_pair(
    state: &AppState,
    user_id: Uuid,
    token_version: i32,
    refresh_token: String,
    signed_in_at: chrono::DateTime<chrono::Utc>,
) -> Result<TokenPair, AuthError> {
    Ok(TokenPair {
        access_token: state
            .jwt
            .issue(user_id, token_version, signed_in_at)
            .map_err(AuthError::internal)?,
        refresh_token,
        token_type: "Bearer",
        expires_in: state.jwt.ttl_secs(),
    })
}
