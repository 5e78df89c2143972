//! `/api/collections/{id}/files`: adding files to a collection (uploaded, or from the
//! caller's workspace) queues their ingestion; removing, retrying, and reading a cited
//! passage. A refused file (type, size, emptiness) stores nothing.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use super::collections::caller;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::extract::Json;
use crate::knowledge::documents::{self, FileLimits, NewFile};
use crate::knowledge::KnowledgeError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/collections/{id}/files").route(web::post().to(add_from_workspace)))
        .service(
            web::resource("/collections/{id}/files/{file}")
                .route(web::put().to(upload))
                .route(web::delete().to(remove)),
        )
        .service(web::resource("/collections/{id}/files/{file}/retry").route(web::post().to(retry)))
        .service(
            web::resource("/collections/{id}/files/{file}/passage").route(web::get().to(passage)),
        );
}

fn limits(state: &AppState) -> FileLimits {
    FileLimits {
        max_file_bytes: state.knowledge.settings.max_file_bytes,
        max_files: state.knowledge.settings.max_files_per_collection,
        user_quota_bytes: state.knowledge.settings.user_quota_bytes,
    }
}

async fn add(
    state: &AppState,
    who: &AuthUser,
    collection: Uuid,
    file: NewFile<'_>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = state.pool.get().await?;
    let model = state.knowledge.model.name.clone();
    let added = documents::add(
        &mut conn,
        &caller(who),
        collection,
        file,
        &limits(state),
        &model,
    )
    .await?;
    state.knowledge.wake_workers();
    Ok(HttpResponse::Accepted().json(added))
}

/// Uploads a file (the raw body) to a collection; the same name replaces it.
#[utoipa::path(put, path = "/api/collections/{id}/files/{file}", tag = "knowledge",
    params(("id" = Uuid, Path), ("file" = String, Path, description = "The file's name, with its extension")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"), responses(
    (status = 202, description = "Queued for ingestion", body = crate::knowledge::documents::FileView),
    (status = 400, description = "Empty file or bad name", body = crate::error::ErrorBody),
    (status = 403, description = "Not the collection's owner", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection", body = crate::error::ErrorBody),
    (status = 413, description = "Too large, or over the uploader's storage quota (`knowledge_quota_exceeded`)", body = crate::error::ErrorBody),
    (status = 415, description = "Not a supported file type", body = crate::error::ErrorBody)))]
async fn upload(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<(Uuid, String)>,
    mut body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let (collection, name) = path.into_inner();
    // Refused before the body is read: the type, and the collection's ownership.
    crate::knowledge::extract::FileKind::of(&name)
        .map_err(|e| ApiError::from(KnowledgeError::Unsupported(e.to_string())))?;
    {
        let mut conn = state.pool.get().await?;
        crate::knowledge::collections::managed(&mut conn, &caller(&who), collection).await?;
    }
    let _permit = state.uploads.try_admit(who.id).ok_or_else(|| {
        ApiError::too_many(
            "too_many_uploads",
            "too many uploads in progress; wait for one to finish and try again",
            1,
        )
    })?;
    let max = state.knowledge.settings.max_file_bytes;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "file_too_large",
            format!("a collection file may have at most {max} bytes"),
        )
    };
    let bytes =
        super::upload_body::read_upload(&req, &mut body, max, &state.settings.security, too_large)
            .await?;
    let file = NewFile {
        name: &name,
        bytes: &bytes,
        workspace_path: None,
    };
    add(&state, &who, collection, file).await
}

/// A workspace file to add.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromWorkspace {
    #[schema(min_length = 1, max_length = 1024)]
    workspace_path: String,
}

/// Adds a file of the caller's workspace to a collection.
#[utoipa::path(post, path = "/api/collections/{id}/files", tag = "knowledge", params(("id" = Uuid, Path)),
    request_body = FromWorkspace, responses(
    (status = 202, description = "Queued for ingestion", body = crate::knowledge::documents::FileView),
    (status = 400, description = "Empty file or bad path", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection or workspace file", body = crate::error::ErrorBody),
    (status = 413, description = "Too large, or over the uploader's storage quota (`knowledge_quota_exceeded`)", body = crate::error::ErrorBody),
    (status = 415, description = "Not a supported file type", body = crate::error::ErrorBody)))]
async fn add_from_workspace(
    state: web::Data<AppState>,
    who: AuthUser,
    collection: web::Path<Uuid>,
    Json(body): Json<FromWorkspace>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let path = body.workspace_path.as_str();
    crate::knowledge::extract::FileKind::of(path)
        .map_err(|e| ApiError::from(KnowledgeError::Unsupported(e.to_string())))?;
    let bytes = state
        .workspaces
        .read(who.id, path)
        .await
        .map_err(|e| match e {
            crate::files::WorkspaceError::NotFound => ApiError::not_found("workspace file"),
            crate::files::WorkspaceError::InvalidPath(m) => {
                ApiError::bad_request("invalid_path", m)
            }
            other => ApiError::internal(anyhow::anyhow!("{other}")),
        })?;
    let file = NewFile {
        name: path,
        bytes: &bytes,
        workspace_path: Some(path),
    };
    add(&state, &who, *collection, file).await
}

/// Removes a file and its chunks.
#[utoipa::path(delete, path = "/api/collections/{id}/files/{file}", tag = "knowledge",
    params(("id" = Uuid, Path), ("file" = Uuid, Path)), responses(
    (status = 204, description = "Removed"),
    (status = 403, description = "Not the collection's owner", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection or file", body = crate::error::ErrorBody)))]
async fn remove(
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<(Uuid, Uuid)>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let (collection, file) = path.into_inner();
    let mut conn = state.pool.get().await?;
    documents::remove(&mut conn, &caller(&who), collection, file).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Queues a failed file again (it resumes from what was embedded).
#[utoipa::path(post, path = "/api/collections/{id}/files/{file}/retry", tag = "knowledge",
    params(("id" = Uuid, Path), ("file" = Uuid, Path)), responses(
    (status = 202, description = "Queued again", body = crate::knowledge::documents::FileView),
    (status = 400, description = "The file has not failed", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection or file", body = crate::error::ErrorBody)))]
async fn retry(
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<(Uuid, Uuid)>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let (collection, file) = path.into_inner();
    let mut conn = state.pool.get().await?;
    let f = documents::retry(&mut conn, &caller(&who), collection, file).await?;
    state.knowledge.wake_workers();
    Ok(HttpResponse::Accepted().json(f))
}

/// The byte range of a cited passage.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Range {
    start: usize,
    end: usize,
}

/// A passage of a file's text with some context (what a citation opens).
#[utoipa::path(get, path = "/api/collections/{id}/files/{file}/passage", tag = "knowledge",
    params(("id" = Uuid, Path), ("file" = Uuid, Path), Range), responses(
    (status = 200, description = "The passage", body = crate::knowledge::documents::Passage),
    (status = 400, description = "The range is not inside the text", body = crate::error::ErrorBody),
    (status = 404, description = "No such collection or file", body = crate::error::ErrorBody)))]
async fn passage(
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<(Uuid, Uuid)>,
    range: web::Query<Range>,
) -> Result<HttpResponse, ApiError> {
    state.knowledge.usable()?;
    let (collection, file) = path.into_inner();
    let mut conn = state.pool.get().await?;
    let p = documents::passage(
        &mut conn,
        &caller(&who),
        collection,
        file,
        range.start,
        range.end,
    )
    .await?;
    Ok(HttpResponse::Ok().json(p))
}
