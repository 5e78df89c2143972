//! `/api/files`: the caller's workspace files (the same ones the file tools see).

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::files::image::ImageError;
use crate::files::{UploadError, WorkspaceError};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/files", web::get().to(list)).service(
        web::resource("/files/{path:.+}")
            .route(web::get().to(download))
            .route(web::put().to(upload))
            .route(web::delete().to(delete)),
    );
}

fn workspace_error(e: WorkspaceError) -> ApiError {
    match e {
        WorkspaceError::NotFound => ApiError::not_found("file"),
        WorkspaceError::InvalidPath(m) => ApiError::bad_request("invalid_path", m),
        WorkspaceError::AlreadyExists => {
            ApiError::conflict("file_exists", "that file already exists")
        }
        WorkspaceError::QuotaExceeded(m) => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "quota_exceeded", m)
        }
        WorkspaceError::TooLarge => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "file_too_large",
            "the file is larger than a workspace file may be",
        ),
        e @ WorkspaceError::UploadCancelled => {
            ApiError::conflict("upload_cancelled", e.to_string())
        }
        other @ (WorkspaceError::NotText | WorkspaceError::Io(_)) => {
            ApiError::internal(anyhow::anyhow!("{other}"))
        }
    }
}

fn upload_error(e: UploadError) -> ApiError {
    match e {
        UploadError::Workspace(e) => workspace_error(e),
        UploadError::Image(ImageError::Unsupported(m)) => {
            ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_image", m)
        }
        UploadError::Image(ImageError::Invalid(m)) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_image", m)
        }
        UploadError::Image(ImageError::TooLarge(m)) => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "image_too_large", m)
        }
    }
}

/// The caller's files and quota use.
#[utoipa::path(get, path = "/api/files", tag = "files",
    responses((status = 200, description = "The files", body = crate::openapi::schemas::FileListing)))]
async fn list(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let items = state
        .workspaces
        .list(who.id)
        .await
        .map_err(workspace_error)?;
    let (bytes, files) = state
        .workspaces
        .usage(who.id)
        .await
        .map_err(workspace_error)?;
    let quota = state.workspaces.quota();
    Ok(HttpResponse::Ok().json(json!({
        "items": items,
        "usage": {"bytes": bytes, "files": files, "max_bytes": quota.max_bytes,
                  "max_files": quota.max_files, "max_file_bytes": quota.max_file_bytes},
    })))
}

/// A file's bytes, as an attachment.
#[utoipa::path(get, path = "/api/files/{path}", tag = "files", params(("path" = String, Path, description = "`/`-separated, relative to the workspace")),
    responses(
    (status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
    (status = 400, description = "The path is not a valid workspace path", body = crate::error::ErrorBody)))]
async fn download(
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bytes = state
        .workspaces
        .read(who.id, &path)
        .await
        .map_err(workspace_error)?;
    let name = path
        .rsplit('/')
        .next()
        .unwrap_or("file")
        .replace(['"', '\\'], "_");
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/octet-stream"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .body(bytes))
}

/// Upload the raw request body; replaces an existing file. An image (`.png`, `.jpg`,
/// `.jpeg`, `.webp`, `.gif`) is normalised once: checked against its name, its size in
/// pixels refused before decoding, EXIF-rotated, its long edge brought to
/// `images.resize_to_px` (2048 px by default) and re-encoded (PNG or JPEG; the answer's
/// `path` names where it was stored).
#[utoipa::path(put, path = "/api/files/{path}", tag = "files", params(("path" = String, Path, description = "`/`-separated, relative to the workspace")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"), responses(
    (status = 201, description = "Created", body = crate::files::Uploaded),
    (status = 200, description = "Replaced", body = crate::files::Uploaded),
    (status = 400, description = "The path is not a valid workspace path", body = crate::error::ErrorBody),
    (status = 409, description = "A directory or file is in the way, or the path was deleted while the upload arrived (`upload_cancelled`)", body = crate::error::ErrorBody),
    (status = 413, description = "The file or the workspace quota is too large, or the image has too many pixels (`image_too_large`)", body = crate::error::ErrorBody),
    (status = 415, description = "SVG, or bytes that are not the image format the name claims (`unsupported_image`)", body = crate::error::ErrorBody),
    (status = 422, description = "A truncated or corrupt image (`invalid_image`)", body = crate::error::ErrorBody)))]
async fn upload(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<String>,
    mut body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // Admitted before a byte is buffered: parallel uploads hold at most
    // `max_concurrent_uploads × max_file_bytes` of memory.
    let _permit = state.uploads.try_admit(who.id).ok_or_else(|| {
        ApiError::too_many(
            "too_many_uploads",
            "too many uploads in progress; wait for one to finish and try again",
            1,
        )
    })?;
    // Registered before the body is read: deleting the path meanwhile cancels this upload.
    let ticket = state
        .workspaces
        .begin_upload(who.id, &path)
        .map_err(workspace_error)?;
    let limit = usize::try_from(state.workspaces.quota().max_file_bytes).unwrap_or(usize::MAX);
    let bytes =
        super::upload_body::read_upload(&req, &mut body, limit, &state.settings.security, || {
            workspace_error(WorkspaceError::TooLarge)
        })
        .await?;
    let stored = ticket.store(bytes).await.map_err(upload_error)?;
    let status = if stored.written.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(HttpResponse::build(status).json(stored))
}

/// Deletes a file.
#[utoipa::path(delete, path = "/api/files/{path}", tag = "files", params(("path" = String, Path, description = "`/`-separated, relative to the workspace")),
    responses(
    (status = 204, description = "Deleted"),
    (status = 400, description = "The path is not a valid workspace path", body = crate::error::ErrorBody)))]
async fn delete(
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .workspaces
        .delete(who.id, &path)
        .await
        .map_err(workspace_error)?;
    Ok(HttpResponse::NoContent().finish())
}
