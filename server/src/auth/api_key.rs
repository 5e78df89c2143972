//! Personal API keys: `ack_` + 256 random bits (base64url), stored as their SHA-256. A
//! fast hash is right here: the secret has full entropy, so there is nothing to brute-force,
//! and argon2 would cost every API call tens of milliseconds.
//!
//! Keys are accepted only by the OpenAI-compatible `/v1` routes ([`ApiCaller`]). They are
//! long-lived secrets pasted into config files and editor settings, so a leaked one should
//! spend its owner's budget at worst: it cannot read conversations, manage keys, change the
//! password or use the admin API (the other routes take access tokens only), and its turns
//! reach the workspace file tools only when it was made with the `files` scope.

use std::future::Future;
use std::pin::Pin;

use actix_web::{dev::Payload, web, FromRequest, HttpRequest};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chrono::Utc;
use rand::RngCore;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::extract::{authenticate, bearer};
use super::key_cache::CachedKey;
use crate::db::{self, models::api_key};
use crate::domain::KeyScopes;
use crate::error::ApiError;
use crate::state::AppState;

/// What every key starts with, so secret scanners can find leaked ones.
pub const KEY_PREFIX: &str = "ack_";
/// Characters of a key shown in lists (`ack_` and 8 more).
const SHOWN_CHARS: usize = 12;
/// Length of a well-formed key: the prefix and 32 bytes in unpadded base64url.
const KEY_LEN: usize = 4 + 43;
/// A key's last use is written at most this often.
const TOUCH_EVERY_SECS: i64 = 60;

/// A fresh key: the secret (shown once), its displayed prefix and its stored hash.
pub struct NewKey {
    pub secret: String,
    pub prefix: String,
    pub hash: Vec<u8>,
}

/// Makes a new random key.
pub fn generate() -> NewKey {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    NewKey {
        prefix: secret.chars().take(SHOWN_CHARS).collect(),
        hash: hash(&secret),
        secret,
    }
}

/// The stored form of a key.
pub fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// Whether a bearer credential looks like one of our keys (not an access token).
pub fn looks_like_key(token: &str) -> bool {
    token.starts_with(KEY_PREFIX)
}

/// The caller of a `/v1` route: an API key's owner or an access token's bearer, checked
/// against the account as it is now.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    pub user_id: Uuid,
    pub username: String,
    pub role: String,
    pub token_version: i32,
    /// The key used, when it was one.
    pub key_id: Option<Uuid>,
    /// The key's scopes; `None` for an access token (not limited by scopes).
    pub key_scopes: Option<KeyScopes>,
}

impl ApiCaller {
    /// The caller as the agent's turn start expects it (the account is re-checked there).
    pub fn signed(&self) -> super::token::SignedToken {
        super::token::SignedToken {
            user_id: self.user_id,
            token_version: self.token_version,
        }
    }
}

/// The key's owner, looked up by the key's hash (and kept in [`AppState::keys`]).
async fn by_key(state: &web::Data<AppState>, secret: &str) -> Result<ApiCaller, ApiError> {
    let invalid = || ApiError::unauthorized("invalid API key");
    if secret.len() != KEY_LEN {
        return Err(invalid());
    }
    let hash = hash(secret);
    let mut conn = db::conn(&state.pool).await?;
    let Some(owner) = api_key::find_by_hash(&mut conn, &hash).await? else {
        state.keys.forget(&hash);
        return Err(invalid());
    };
    let now = Utc::now();
    if owner.expires_at.is_some_and(|t| t <= now) {
        return Err(ApiError::unauthorized("this API key has expired"));
    }
    if owner.disabled {
        return Err(ApiError::unauthorized("this account is disabled"));
    }
    let every = chrono::Duration::seconds(TOUCH_EVERY_SECS);
    let due = owner.last_used_at.is_none_or(|t| t < now - every);
    state.keys.put(
        hash,
        CachedKey {
            key_id: owner.key_id,
            user_id: owner.user_id,
            username: owner.username.clone(),
            role: owner.role.clone(),
            expires_at: owner.expires_at,
            scopes: KeyScopes::stored(&owner.scopes),
            touched_at: if due { Some(now) } else { owner.last_used_at },
        },
    );
    if due {
        // Off the request's path: a lost write only loses a timestamp.
        tokio::spawn(async move {
            if let Err(e) = api_key::touch(&mut conn, owner.key_id, now, every).await {
                tracing::warn!(error = %e, "could not record an API key's last use");
            }
        });
    }
    Ok(ApiCaller {
        user_id: owner.user_id,
        username: owner.username,
        role: owner.role,
        token_version: owner.token_version,
        key_id: Some(owner.key_id),
        key_scopes: Some(KeyScopes::stored(&owner.scopes)),
    })
}

/// The key's owner as [`AppState::keys`] remembers it, without a database round trip: `None`
/// when the key is not kept. The caller must have the key re-checked (the turn's start does).
fn by_cached_key(state: &web::Data<AppState>, secret: &str) -> Option<Result<ApiCaller, ApiError>> {
    let hash = hash(secret);
    let key = state.keys.get(&hash)?;
    let now = Utc::now();
    if key.expires_at.is_some_and(|t| t <= now) {
        return Some(Err(ApiError::unauthorized("this API key has expired")));
    }
    let every = chrono::Duration::seconds(TOUCH_EVERY_SECS);
    if state.keys.touch_due(&hash, now, every) {
        let pool = state.pool.clone();
        tokio::spawn(async move {
            let Ok(mut conn) = db::conn(&pool).await else {
                tracing::warn!("could not record an API key's last use: no connection");
                return;
            };
            if let Err(e) = api_key::touch(&mut conn, key.key_id, now, every).await {
                tracing::warn!(error = %e, "could not record an API key's last use");
            }
        });
    }
    Some(Ok(ApiCaller {
        user_id: key.user_id,
        username: key.username,
        role: key.role,
        // Unused for keys: the turn's start checks the key and the account as they are.
        token_version: 0,
        key_id: Some(key.key_id),
        key_scopes: Some(key.scopes),
    }))
}

/// The caller of `/v1/chat/completions`: as [`ApiCaller`], except that a key this process
/// has seen is not looked up again here; the turn's start re-checks it in its first round
/// trip ([`TurnCaller::api_key`]). Anything that answers before the turn starts must call
/// [`TurnCaller::confirm`] first, so a revoked key still gets its 401.
#[derive(Debug, Clone)]
pub struct TurnCaller {
    pub caller: ApiCaller,
    /// The hash of a key taken from the cache (not checked yet).
    unchecked: Option<Vec<u8>>,
}

impl TurnCaller {
    /// The key the turn's start must re-check, if the caller used one.
    pub fn api_key(&self) -> Option<uuid::Uuid> {
        self.caller.key_id
    }

    /// Checks a cached key against the database now (for answers that do not start a turn).
    pub async fn confirm(&self, state: &web::Data<AppState>) -> Result<(), ApiError> {
        let Some(hash) = &self.unchecked else {
            return Ok(());
        };
        let mut conn = db::conn(&state.pool).await?;
        match api_key::find_by_hash(&mut conn, hash).await? {
            None => {
                state.keys.forget(hash);
                Err(ApiError::unauthorized("invalid API key"))
            }
            Some(o) if o.expires_at.is_some_and(|t| t <= Utc::now()) => {
                Err(ApiError::unauthorized("this API key has expired"))
            }
            Some(o) if o.disabled => Err(ApiError::unauthorized("this account is disabled")),
            Some(_) => Ok(()),
        }
    }

    /// Drops a cached key the turn's start refused.
    pub fn forget(&self, state: &web::Data<AppState>) {
        if let Some(hash) = &self.unchecked {
            state.keys.forget(hash);
        }
    }
}

impl FromRequest for TurnCaller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer(req);
        let cached = match (&state, &token) {
            (Some(state), Some(t)) if looks_like_key(t) => by_cached_key(state, t),
            _ => None,
        };
        if let Some(found) = cached {
            let unchecked = token.as_deref().map(hash);
            return Box::pin(async move { found.map(|caller| TurnCaller { caller, unchecked }) });
        }
        let full = ApiCaller::from_request(req, payload);
        Box::pin(async move {
            full.await.map(|caller| TurnCaller {
                caller,
                unchecked: None,
            })
        })
    }
}

impl FromRequest for ApiCaller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer(req);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("no app state")))?;
            match token {
                Some(t) if looks_like_key(&t) => by_key(&state, &t).await,
                token => {
                    let (user, token_version) = authenticate(state, token).await?;
                    Ok(ApiCaller {
                        user_id: user.id,
                        username: user.username,
                        role: user.role,
                        token_version,
                        key_id: None,
                        key_scopes: None,
                    })
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefixed_random_and_hash_to_what_is_stored() {
        let a = generate();
        let b = generate();
        assert!(a.secret.starts_with("ack_"));
        assert_eq!(a.secret.len(), KEY_LEN);
        assert_ne!(a.secret, b.secret);
        assert_eq!(a.prefix, a.secret[..SHOWN_CHARS]);
        assert_eq!(a.hash, hash(&a.secret));
        assert_eq!(a.hash.len(), 32);
        assert!(looks_like_key(&a.secret));
    }
}
