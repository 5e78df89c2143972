//! `/api/keys`: a user's personal API keys for the OpenAI-compatible `/v1` API. The secret
//! is answered once, at creation; only its hash is stored. Managing keys takes an access
//! token: a key cannot mint or revoke keys.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{api_key as keygen, AuthUser};
use crate::db::{self, models::api_key};
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
    /// When the key stops working (RFC 3339, in the future); none: it never expires.
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
}

/// A new key: `key` is the secret, shown this once.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    id: Uuid,
    name: String,
    key: String,
    prefix: String,
    created_at: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
}

/// The caller's keys.
#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyList {
    items: Vec<api_key::ApiKey>,
    next_cursor: Option<String>,
}

/// Creates a key; the answer holds the secret, which is never shown again.
#[utoipa::path(post, path = "/api/keys", tag = "keys", request_body = CreateKey, responses(
    (status = 201, description = "The key, with its secret shown once", body = CreatedKey),
    (status = 400, description = "Invalid name or expiry", body = crate::error::ErrorBody),
    (status = 409, description = "Too many keys", body = crate::error::ErrorBody)))]
async fn create(
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
    if body.expires_at.is_some_and(|t| t <= Utc::now()) {
        return Err(ApiError::bad_request(
            "invalid_expires_at",
            "expires_at must be in the future",
        ));
    }
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
        body.expires_at,
    )
    .await?;
    tracing::info!(user = %who.id, key = %row.id, "API key created");
    Ok(HttpResponse::Created().json(CreatedKey {
        id: row.id,
        name: row.name,
        key: fresh.secret,
        prefix: row.prefix,
        created_at: row.created_at,
        expires_at: row.expires_at,
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
