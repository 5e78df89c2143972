//! `/api/conversations/{id}/shares` and `/api/shares/{id}` for the link's owner: make a link
//! to one's own conversation, list its links (with how often each was read), change one,
//! revoke one. The rules are `crate::sharing`'s; these handlers translate HTTP.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db;
use crate::error::ApiError;
use crate::extract::{double_option, Json};
use crate::sharing::{self, create::NewShare, manage, Scope, ShareInfo};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/conversations/{id}/shares")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/shares/{id}")
            .route(web::get().to(super::share_read::read))
            .route(web::patch().to(update))
            .route(web::delete().to(revoke)),
    );
}

/// Where links point: `public_url` when set, else the address the server listens on (the
/// port it bound). Never the request's `Host` (or `X-Forwarded-Host`): a client names that,
/// and a forged one would have the server hand out links to another origin.
pub(crate) fn link_base(req: &HttpRequest, state: &AppState) -> String {
    state
        .settings
        .browser_url(req.app_config().local_addr().port())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ShareCreate {
    /// `org`: any signed-in account of this server; `public`: anyone with the link (only
    /// roles an admin allowed: `public_share_not_allowed` otherwise).
    scope: Scope,
    /// When the link stops working, at most a year away; absent or null: until revoked.
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
    /// Show tool outputs and tool-call arguments as a marker.
    #[serde(default)]
    redact_tools: bool,
}

/// What `PATCH` may change; at least one field.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SharePatch {
    redact_tools: Option<bool>,
    /// A new expiry (at most a year away); null: until revoked.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<DateTime<Utc>>, nullable)]
    expires_at: Option<Option<DateTime<Utc>>>,
}

/// A conversation's links, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ShareList {
    items: Vec<ShareInfo>,
    next_cursor: Option<String>,
    /// Whether the caller's role may make public links.
    can_share_public: bool,
}

/// Makes a link to a snapshot of one of the caller's conversations.
#[utoipa::path(post, path = "/api/conversations/{id}/shares", tag = "sharing",
    params(("id" = Uuid, Path)), request_body = ShareCreate, responses(
    (status = 201, description = "The link", body = ShareInfo),
    (status = 400, description = "An expiry in the past or more than a year away (`invalid_expires_at`)", body = crate::error::ErrorBody),
    (status = 403, description = "The caller's role may not make public links (`public_share_not_allowed`)", body = crate::error::ErrorBody),
    (status = 409, description = "The conversation has 50 live links already (`limit_reached`)", body = crate::error::ErrorBody),
    (status = 422, description = "The conversation has no messages (`nothing_to_share`)", body = crate::error::ErrorBody)))]
async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<ShareCreate>,
) -> Result<HttpResponse, ApiError> {
    let now = (state.clock)();
    let asked = NewShare {
        scope: body.scope,
        expires_at: body.expires_at,
        redact_tools: body.redact_tools,
    };
    let mut conn = db::conn(&state.pool).await?;
    let made = sharing::create::create(&mut conn, who.id, *id, &asked, now).await?;
    tracing::info!(conversation = %id, scope = asked.scope.as_str(), "conversation shared");
    Ok(HttpResponse::Created().json(ShareInfo::of(made, &link_base(&req, &state), now)))
}

/// The links to one of the caller's conversations (revoked ones too), with their views.
#[utoipa::path(get, path = "/api/conversations/{id}/shares", tag = "sharing",
    params(("id" = Uuid, Path)), responses(
    (status = 200, description = "The links", body = ShareList)))]
async fn list(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let now = (state.clock)();
    let mut conn = db::conn(&state.pool).await?;
    let rows = manage::list(&mut conn, who.id, *id).await?;
    let can_share_public = sharing::policy::user_may_share_publicly(&mut conn, who.id).await?;
    let base = link_base(&req, &state);
    Ok(HttpResponse::Ok().json(ShareList {
        items: rows
            .into_iter()
            .map(|s| ShareInfo::of(s, &base, now))
            .collect(),
        next_cursor: None,
        can_share_public,
    }))
}

/// Changes one of the caller's links: hide or show tool details, a new expiry.
#[utoipa::path(patch, path = "/api/shares/{id}", tag = "sharing",
    params(("id" = String, Path, description = "The link's id")), request_body = SharePatch,
    responses(
    (status = 200, description = "Changed", body = ShareInfo),
    (status = 400, description = "Nothing to change, or an invalid expiry", body = crate::error::ErrorBody),
    (status = 410, description = "The link was revoked (`share_gone`)", body = crate::error::ErrorBody)))]
async fn update(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<String>,
    Json(body): Json<SharePatch>,
) -> Result<HttpResponse, ApiError> {
    let now = (state.clock)();
    let changes = manage::Changes {
        redact_tools: body.redact_tools,
        expires_at: body.expires_at,
    };
    let mut conn = db::conn(&state.pool).await?;
    let changed = manage::update(&mut conn, who.id, &id, &changes, now).await?;
    Ok(HttpResponse::Ok().json(ShareInfo::of(changed, &link_base(&req, &state), now)))
}

/// Revokes a link (the caller's; an admin, anyone's — recorded in the admin trail). At
/// once and for good; revoking twice is fine.
#[utoipa::path(delete, path = "/api/shares/{id}", tag = "sharing",
    params(("id" = String, Path, description = "The link's id")),
    responses((status = 204, description = "Revoked")))]
async fn revoke(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let caller = sharing::Caller {
        id: who.id,
        admin: who.is_admin(),
    };
    let mut conn = db::conn(&state.pool).await?;
    manage::revoke(&mut conn, caller, &who, &id, (state.clock)()).await?;
    Ok(HttpResponse::NoContent().finish())
}
