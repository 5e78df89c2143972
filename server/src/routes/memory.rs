//! `/api/me/memory`: the caller's memory notes, their on/off switch and their limits.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db;
use crate::error::ApiError;
use crate::extract::Json;
use crate::memory::{store, MemoryError, Note};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/me/memory")
            .route(web::get().to(list))
            .route(web::post().to(add)),
    )
    .route("/me/memory/settings", web::put().to(settings))
    .service(
        web::resource("/me/memory/{id}")
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}

/// A note's text.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    text: String,
}

/// Memory on or off (asked, and answered).
#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct MemorySwitch {
    enabled: bool,
}

/// `GET /api/me/memory`.
#[derive(Serialize, utoipa::ToSchema)]
struct MemoryView {
    enabled: bool,
    notes: Vec<Note>,
    limits: MemoryLimits,
    /// What the notes take of `max_total_tokens`, estimated.
    used_tokens: u64,
}

/// The server's memory limits, per user.
#[derive(Serialize, utoipa::ToSchema)]
struct MemoryLimits {
    max_notes: usize,
    max_note_chars: usize,
    max_total_tokens: u64,
}

/// The caller's notes, whether memory is on, and the limits.
#[utoipa::path(get, path = "/api/me/memory", tag = "me", responses(
    (status = 200, description = "The notes, the switch and the limits", body = MemoryView)))]
async fn list(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let notes = store::list(&mut conn, who.id).await?;
    let enabled = store::enabled(&mut conn, who.id).await?;
    let texts: Vec<String> = notes.iter().map(|n| n.text.clone()).collect();
    let limits = &state.settings.memory;
    Ok(HttpResponse::Ok().json(MemoryView {
        enabled,
        notes,
        limits: MemoryLimits {
            max_notes: limits.max_notes,
            max_note_chars: limits.max_note_chars,
            max_total_tokens: limits.max_total_tokens,
        },
        used_tokens: crate::memory::tokens_of(&texts),
    }))
}

/// Adds a note.
#[utoipa::path(post, path = "/api/me/memory", tag = "me", request_body = NoteBody, responses(
    (status = 201, description = "Stored", body = Note),
    (status = 422, description = "Empty or too long (`invalid_note`), or memory is full (`memory_full`)", body = crate::error::ErrorBody)))]
async fn add(
    state: web::Data<AppState>,
    who: AuthUser,
    Json(body): Json<NoteBody>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let note = store::add(
        &mut conn,
        who.id,
        &body.text,
        store::Writer::User,
        &state.settings.memory,
    )
    .await?;
    Ok(HttpResponse::Created().json(note))
}

/// Rewrites a note.
#[utoipa::path(put, path = "/api/me/memory/{id}", tag = "me", params(("id" = Uuid, Path)),
    request_body = NoteBody, responses(
    (status = 200, description = "Stored", body = Note),
    (status = 404, description = "No such note of yours", body = crate::error::ErrorBody),
    (status = 422, description = "Empty or too long (`invalid_note`), or memory would be over its limit (`memory_full`)", body = crate::error::ErrorBody)))]
async fn update(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<NoteBody>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let note = store::update(&mut conn, who.id, *id, &body.text, &state.settings.memory).await?;
    Ok(HttpResponse::Ok().json(note))
}

/// Deletes a note.
#[utoipa::path(delete, path = "/api/me/memory/{id}", tag = "me", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
    (status = 404, description = "No such note of yours", body = crate::error::ErrorBody)))]
async fn delete(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    if store::delete(&mut conn, who.id, *id).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(MemoryError::NotFound.into())
    }
}

/// Turns memory on or off for all the caller's chats (the notes stay).
#[utoipa::path(put, path = "/api/me/memory/settings", tag = "me", request_body = MemorySwitch,
    responses((status = 200, description = "Whether memory is now on", body = MemorySwitch)))]
async fn settings(
    state: web::Data<AppState>,
    who: AuthUser,
    Json(body): Json<MemorySwitch>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    store::set_enabled(&mut conn, who.id, body.enabled).await?;
    Ok(HttpResponse::Ok().json(MemorySwitch {
        enabled: body.enabled,
    }))
}
