//! Proving the password again: a password change, and a sensitive action (creating an API
//! key) on a session that signed in too long ago. Both are throttled like a sign-in.

use std::net::IpAddr;

use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use secrecy::SecretString;
use uuid::Uuid;

use super::error::AuthError;
use super::session::{to_chrono, token_pair, TokenPair, MAX_LOGIN_FIELD_BYTES};
use super::{password, refresh};
use crate::db::models::{api_key, refresh_token, user};
use crate::db::{self};
use crate::state::AppState;

/// The account, once `given` is its current password (single sign-on accounts have none:
/// [`AuthError::ExternalAccount`]).
pub async fn confirm_password(
    state: &AppState,
    user_id: Uuid,
    given: &str,
    client: Option<IpAddr>,
) -> Result<user::User, AuthError> {
    if given.len() > MAX_LOGIN_FIELD_BYTES {
        return Err(AuthError::WrongPassword);
    }
    let account = {
        let mut conn = db::conn(&state.pool).await?;
        user::find(&mut conn, user_id)
            .await?
            .ok_or(AuthError::AccountGone)?
    };
    if account.source != user::SOURCE_PASSWORD {
        return Err(AuthError::ExternalAccount);
    }
    if let Err(wait) = state.throttle.begin(&account.username, client) {
        return Err(AuthError::Throttled {
            message: "too many wrong passwords; wait a moment and try again",
            retry_after_secs: wait.as_secs() + 1,
        });
    }
    let ok = state
        .hasher
        .verify(
            SecretString::from(given.to_owned()),
            Some(account.password_hash.clone()),
        )
        .await
        .map_err(AuthError::internal)?;
    if !ok {
        return Err(AuthError::WrongPassword);
    }
    state.throttle.succeeded(&account.username, client);
    Ok(account)
}

/// What a password change asks for besides the passwords.
#[derive(Debug, Clone, Copy)]
pub struct ChangeOptions {
    /// Also revoke every personal API key of the account (a key made with a stolen session
    /// would otherwise outlive the change).
    pub revoke_api_keys: bool,
}

/// A changed password: the caller's new session, and how many API keys were revoked.
pub struct Changed {
    pub tokens: TokenPair,
    pub api_keys_revoked: usize,
}

/// Changes the caller's password after checking the current one. Every other session ends:
/// all access tokens (token version bump) and refresh tokens die; the caller gets a fresh
/// pair in a new family (a fresh sign-in).
pub async fn change_password(
    state: &AppState,
    user_id: Uuid,
    current: &str,
    new: &str,
    options: ChangeOptions,
    client: Option<IpAddr>,
) -> Result<Changed, AuthError> {
    password::check_length(new).map_err(|m| AuthError::InvalidPassword(m.to_string()))?;
    confirm_password(state, user_id, current, client).await?;
    let hash = state
        .hasher
        .hash(SecretString::from(new.to_owned()))
        .await
        .map_err(AuthError::internal)?;
    let token = refresh::generate();
    let expires = chrono::Utc::now() + to_chrono(state.settings.auth.refresh_token_ttl);
    let token_hash = refresh::hash(&token);
    let mut conn = db::conn(&state.pool).await?;
    let (version, api_keys_revoked) = conn
        .transaction(|conn| {
            async move {
                let version = user::set_password(conn, user_id, &hash).await?;
                refresh_token::revoke_all_for_user(conn, user_id).await?;
                refresh_token::insert(conn, user_id, Uuid::new_v4(), &token_hash, expires).await?;
                let revoked = if options.revoke_api_keys {
                    api_key::delete_all_owned(conn, user_id).await?
                } else {
                    0
                };
                Ok::<_, diesel::result::Error>((version, revoked))
            }
            .scope_boxed()
        })
        .await?;
    Ok(Changed {
        tokens: token_pair(state, user_id, version, token, chrono::Utc::now())?,
        api_keys_revoked,
    })
}
