//! `/api/keys`: a user's personal API keys for the OpenAI-compatible `/v1` API. The secret
//! is answered once, at creation; only its hash is stored. Managing keys takes an access
//! token: a key cannot mint or revoke keys. Every key expires (a default and a maximum
//! lifetime are settings), and making one needs a recent sign-in or the password again.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{api_key as keygen, password_change, AuthError, AuthUser};
use crate::db::{self, models::api_key};
use crate::domain::KeyScopes;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

const MAX_NAME_CHARS: usize = 100;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/keys")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .route("/keys/{id}", web::delete().to(revoke));
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// 1 to 100 characters, to tell keys apart.
    name: String,
    /// When the key stops working (RFC 3339, in the future, at most `auth.api_key_max_days`
    /// away); none: `auth.api_key_default_days` from now.
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
    /// What the key may do besides chatting on `/v1`: `files` lets its turns use the
    /// workspace file tools, `knowledge` the document search (`search_knowledge`), `memory`
    /// the `remember` tool. `chat` is always included; default `["chat"]`.
    #[serde(default)]
    scopes: Vec<String>,
    /// The caller's current password, when their sign-in is older than
    /// `auth.reauth_secs` (a stolen access token alone cannot mint a key).
    #[serde(default)]
    password: Option<String>,
}

/// A new key: `key` is the secret, shown this once.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    id: Uuid,
    name: String,
    key: String,
    prefix: String,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    scopes: Vec<String>,
}

/// The caller's keys, and the rules new ones follow.
#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyList {
    items: Vec<api_key::ApiKey>,
    next_cursor: Option<String>,
    policy: KeyPolicy,
}

/// How long keys may live, and how recent a sign-in creating one needs.
#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyPolicy {
    default_days: u32,
    max_days: u32,
    reauth_secs: u64,
}

/// The scopes, as the refusals name them: "`chat`, `files`, …".
fn scope_names() -> String {
    crate::domain::key_scopes::ALL
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn policy(state: &AppState) -> KeyPolicy {
    let auth = &state.settings.auth;
    KeyPolicy {
        default_days: auth.api_key_default_days,
        max_days: auth.api_key_max_days,
        reauth_secs: auth.reauth_secs,
    }
}

/// When the key expires: as asked, within the maximum; or the default.
fn expiry(state: &AppState, asked: Option<DateTime<Utc>>) -> Result<DateTime<Utc>, ApiError> {
    let auth = &state.settings.auth;
    let now = Utc::now();
    let latest = now + chrono::Duration::days(i64::from(auth.api_key_max_days));
    match asked {
        None => Ok(now + chrono::Duration::days(i64::from(auth.api_key_default_days))),
        Some(t) if t <= now => Err(ApiError::bad_request(
            "invalid_expires_at",
            "expires_at must be in the future",
        )),
        Some(t) if t > latest => Err(ApiError::bad_request(
            "invalid_expires_at",
            format!(
                "a key may last at most {} days (auth.api_key_max_days)",
                auth.api_key_max_days
            ),
        )),
        Some(t) => Ok(t),
    }
}

/// A key may be made on a recent sign-in, or with the password confirmed again.
async fn confirm_recent_sign_in(
    req: &HttpRequest,
    state: &AppState,
    who: &AuthUser,
    password: Option<&str>,
) -> Result<(), ApiError> {
    let within = std::time::Duration::from_secs(state.settings.auth.reauth_secs);
    if who.signed_in_within(within) {
        return Ok(());
    }
    let reauth = || {
        ApiError::new(
            actix_web::http::StatusCode::FORBIDDEN,
            "reauth_required",
            format!(
                "creating an API key needs a sign-in within the last {} minutes: confirm your \
                 password (`password`), or sign in again with single sign-on",
                within.as_secs().div_ceil(60)
            ),
        )
    };
    let Some(given) = password else {
        return Err(reauth());
    };
    let client = crate::security::client_ip(req, &state.settings.security.trusted_proxies);
    match password_change::confirm_password(state, who.id, given, client).await {
        Ok(_) => Ok(()),
        Err(AuthError::ExternalAccount) => Err(reauth()),
        Err(e) => Err(e.into()),
    }
}

/// Creates a key; the answer holds the secret, which is never shown again.
#[utoipa::path(post, path = "/api/keys", tag = "keys", request_body = CreateKey, responses(
    (status = 201, description = "The key, with its secret shown once", body = CreatedKey),
    (status = 400, description = "Invalid name or expiry", body = crate::error::ErrorBody),
    (status = 403, description = "The sign-in is not recent and no (or a wrong) password was given", body = crate::error::ErrorBody),
    (status = 429, description = "Too many wrong passwords", body = crate::error::ErrorBody),
    (status = 422, description = "An unknown scope", body = crate::error::ErrorBody),
    (status = 409, description = "Too many keys", body = crate::error::ErrorBody)))]
async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    Json(body): Json<CreateKey>,
) -> Result<HttpResponse, ApiError> {
    let name = crate::db::pg_safe_text(&body.name).trim().to_owned();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::bad_request(
            "invalid_name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    let expires_at = expiry(&state, body.expires_at)?;
    if body.scopes.len() > KeyScopes::ALL_COUNT {
        return Err(ApiError::unprocessable(
            "invalid_scopes",
            format!("scopes lists each of {} at most once", scope_names()),
        ));
    }
    let scopes = KeyScopes::requested(&body.scopes).map_err(|unknown| {
        ApiError::unprocessable(
            "invalid_scopes",
            format!(
                "`{}` is not a key scope; scopes are {}",
                crate::tools::truncate_chars(&unknown, 40),
                scope_names()
            ),
        )
    })?;
    confirm_recent_sign_in(&req, &state, &who, body.password.as_deref()).await?;
    let mut conn = db::conn(&state.pool).await?;
    if api_key::count_owned(&mut conn, who.id).await? >= api_key::MAX_KEYS_PER_USER {
        return Err(ApiError::conflict(
            "too_many_keys",
            format!(
                "you have {} keys already; revoke one first",
                api_key::MAX_KEYS_PER_USER
            ),
        ));
    }
    let fresh = keygen::generate();
    let row = api_key::insert(
        &mut conn,
        who.id,
        &name,
        &fresh.prefix,
        &fresh.hash,
        Some(expires_at),
        scopes,
    )
    .await?;
    tracing::info!(user = %who.id, key = %row.id, scopes = ?row.scopes, "API key created");
    Ok(HttpResponse::Created().json(CreatedKey {
        id: row.id,
        name: row.name,
        key: fresh.secret,
        prefix: row.prefix,
        created_at: row.created_at,
        expires_at,
        scopes: row.scopes,
    }))
}

/// The caller's keys, newest first (never their secrets).
#[utoipa::path(get, path = "/api/keys", tag = "keys", responses(
    (status = 200, description = "The caller's keys", body = KeyList)))]
async fn list(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let items = api_key::list_owned(&mut conn, who.id).await?;
    Ok(HttpResponse::Ok().json(KeyList {
        items,
        next_cursor: None,
        policy: policy(&state),
    }))
}

/// Revokes one of the caller's keys at once; another user's key answers 404.
#[utoipa::path(delete, path = "/api/keys/{id}", tag = "keys", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Revoked"),
    (status = 404, description = "No such key of yours", body = crate::error::ErrorBody)))]
async fn revoke(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    if !api_key::delete(&mut conn, *id, Some(who.id)).await? {
        return Err(ApiError::not_found("API key"));
    }
    tracing::info!(user = %who.id, key = %*id, "API key revoked");
    Ok(HttpResponse::NoContent().finish())
}
