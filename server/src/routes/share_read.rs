//! Reading through a link, and continuing as a copy: `GET /api/shares/{id}` (the snapshot),
//! `GET /api/shares/{id}/files/{path}` (a file one of its messages attached),
//! `POST /api/shares/{id}/fork` and `POST /api/conversations/{id}/fork`. A link needs no
//! sign-in when it is public, so reading takes the bearer token only when one is sent (and
//! then it must be valid). Readings are bounded per client address before the database is
//! asked anything (and per link once it is known): 429 `rate_limited` with `Retry-After`.
//! Answers are never cached or indexed: the URL is the secret.

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse, HttpResponseBuilder};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db;
use crate::error::ApiError;
use crate::extract::Json;
use crate::routes::conversation_read::{encode_cursor, window_of, WindowQuery};
use crate::sharing::{self, fork::Source, read::SharedConversation, AdminReader, Page, Viewer};
use crate::state::AppState;

/// `GET /shares/{id}` is registered with the owner's methods on its resource
/// (`super::shares`): one resource per path, or the first would answer 405 to the others.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/shares/{id}/files/{path:.+}", web::get().to(file))
        .route("/shares/{id}/fork", web::post().to(fork_share))
        .route("/conversations/{id}/fork", web::post().to(fork_own));
}

/// Who reads: the signed-in user when a bearer token is sent (401 when it is not valid),
/// else nobody; and the client's address for the audit row. A reading over the client
/// address's rate is refused here, before the database is asked anything.
async fn viewer(req: &HttpRequest, state: &AppState) -> Result<Viewer, ApiError> {
    let address = address(req, state);
    state
        .share_reads
        .admit_address(address.as_deref())
        .map_err(sharing::SharingError::RateLimited)?;
    let user = if req.headers().contains_key(header::AUTHORIZATION) {
        Some(AuthUser::from_request(req, &mut Payload::None).await?)
    } else {
        None
    };
    Ok(signed_in(user.as_ref(), address))
}

/// The viewer `user` (if any) is, reading from `address`.
fn signed_in(user: Option<&AuthUser>, address: Option<String>) -> Viewer {
    Viewer {
        user: user.map(|u| u.id),
        address,
        admin: user.filter(|u| u.is_admin()).map(|u| AdminReader {
            id: u.id,
            name: u.username.clone(),
        }),
    }
}

fn address(req: &HttpRequest, state: &AppState) -> Option<String> {
    crate::security::client_ip(req, &state.settings.security.trusted_proxies)
        .map(|ip| ip.to_string())
}

/// An answer no cache keeps and no search engine indexes.
fn private(mut b: HttpResponseBuilder) -> HttpResponseBuilder {
    b.insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Robots-Tag", "noindex, nofollow"));
    b
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    /// A user or assistant message of the conversation (of the link's snapshot): the copy
    /// holds the messages up to and including it, and an assistant message's tool results.
    at_message_id: Uuid,
}

/// A shared conversation, read-only: a window of the snapshot's latest messages (tool
/// details hidden when the link says so), older ones page by page (`?before=`) as the
/// owner's own conversation reads. Each reading is counted.
#[utoipa::path(get, path = "/api/shares/{id}", tag = "sharing",
    security((), ("bearer" = [])),
    params(("id" = String, Path, description = "The link's id"), WindowQuery), responses(
    (status = 200, description = "The shared conversation", body = SharedConversation),
    (status = 400, description = "A cursor this server did not issue (`invalid_cursor`)", body = crate::error::ErrorBody),
    (status = 401, description = "An org link read without signing in (`sign_in_required`), or an invalid token", body = crate::error::ErrorBody),
    (status = 404, description = "No such link", body = crate::error::ErrorBody),
    (status = 410, description = "The link was revoked or has expired (`share_gone`)", body = crate::error::ErrorBody),
    (status = 429, description = "Too many readings from this address or of this link (`rate_limited`, with `Retry-After`)", body = crate::error::ErrorBody)))]
pub(crate) async fn read(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<WindowQuery>,
) -> Result<HttpResponse, ApiError> {
    let (before, limit) = window_of(&query)?;
    let viewer = viewer(&req, &state).await?;
    let mut conn = db::conn(&state.pool).await?;
    let page = Page { before, limit };
    let (mut shared, older) = sharing::read::read(
        &mut conn,
        &state.share_reads,
        &id,
        &viewer,
        page,
        (state.clock)(),
    )
    .await?;
    shared.messages_before = older.map(encode_cursor);
    Ok(private(HttpResponse::Ok()).json(shared))
}

/// A file a message of the snapshot was sent with, from the sharer's workspace, as a
/// download. Each download is recorded.
#[utoipa::path(get, path = "/api/shares/{id}/files/{path}", tag = "sharing",
    security((), ("bearer" = [])),
    params(("id" = String, Path, description = "The link's id"),
        ("path" = String, Path, description = "The file's path as the message attached it")),
    responses(
    (status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
    (status = 401, description = "An org link read without signing in (`sign_in_required`)", body = crate::error::ErrorBody),
    (status = 404, description = "No such link, or no message of its snapshot attached that file", body = crate::error::ErrorBody),
    (status = 410, description = "The link is gone (`share_gone`), or the file was changed or removed since (`share_file_changed`: its SHA-256 is not the one recorded when the message was sent)", body = crate::error::ErrorBody),
    (status = 429, description = "Too many readings (`rate_limited`, with `Retry-After`)", body = crate::error::ErrorBody)))]
async fn file(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, file_path) = path.into_inner();
    let viewer = viewer(&req, &state).await?;
    let mut conn = db::conn(&state.pool).await?;
    let now = (state.clock)();
    let shared = sharing::files::fetch(
        &mut conn,
        &state.workspaces,
        &state.share_reads,
        &id,
        &file_path,
        &viewer,
        now,
    )
    .await?;
    let name = shared.name.replace(['"', '\\'], "_");
    Ok(private(HttpResponse::Ok())
        .insert_header((header::CONTENT_TYPE, "application/octet-stream"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .body(shared.bytes))
}

/// Continues a shared conversation as a new one of the caller's: the snapshot up to a
/// message, tool details still hidden if the link hides them, files named but not copied.
#[utoipa::path(post, path = "/api/shares/{id}/fork", tag = "sharing",
    params(("id" = String, Path, description = "The link's id")), request_body = ForkBody,
    responses(
    (status = 201, description = "The new conversation", body = crate::db::models::conversation::Conversation),
    (status = 410, description = "The link was revoked or has expired (`share_gone`)", body = crate::error::ErrorBody),
    (status = 422, description = "Not a user or assistant message of the snapshot (`invalid_fork_point`)", body = crate::error::ErrorBody),
    (status = 429, description = "Too many readings (`rate_limited`, with `Retry-After`)", body = crate::error::ErrorBody)))]
async fn fork_share(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<String>,
    Json(body): Json<ForkBody>,
) -> Result<HttpResponse, ApiError> {
    let address = address(&req, &state);
    state
        .share_reads
        .admit_address(address.as_deref())
        .map_err(sharing::SharingError::RateLimited)?;
    let source = Source::Share {
        id: id.into_inner(),
        viewer: signed_in(Some(&who), address),
    };
    let mut conn = db::conn(&state.pool).await?;
    let made = sharing::fork::fork(
        &mut conn,
        &state.share_reads,
        who.id,
        source,
        body.at_message_id,
        (state.clock)(),
    )
    .await?;
    Ok(HttpResponse::Created().json(made))
}

/// Continues one of the caller's conversations as a new one: its messages up to a message
/// (its model, instructions and pinned collections too). Usage is not copied.
#[utoipa::path(post, path = "/api/conversations/{id}/fork", tag = "conversations",
    params(("id" = Uuid, Path)), request_body = ForkBody, responses(
    (status = 201, description = "The new conversation", body = crate::db::models::conversation::Conversation),
    (status = 422, description = "Not a user or assistant message of this conversation (`invalid_fork_point`)", body = crate::error::ErrorBody)))]
async fn fork_own(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<ForkBody>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let source = Source::Own(*id);
    let made = sharing::fork::fork(
        &mut conn,
        &state.share_reads,
        who.id,
        source,
        body.at_message_id,
        (state.clock)(),
    )
    .await?;
    Ok(HttpResponse::Created().json(made))
}
