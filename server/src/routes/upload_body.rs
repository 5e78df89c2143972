//! Reading an uploaded request body: at most `limit` bytes (a declared larger length is
//! refused before a byte is read), and at the pace `security.upload_*` asks for, so a
//! slow-drip client cannot hold an upload slot for ever.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest};
use futures_util::StreamExt;

use crate::error::ApiError;
use crate::security::upload_pace::BodyPace;
use crate::security::SecuritySettings;

/// The body's bytes, or `too_large()` as soon as it is known to exceed `limit`.
pub async fn read_upload(
    req: &HttpRequest,
    body: &mut web::Payload,
    limit: usize,
    security: &SecuritySettings,
    too_large: impl Fn() -> ApiError,
) -> Result<Vec<u8>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let pace = BodyPace::start(security.upload_deadline, security.upload_min_bytes_per_sec);
    let mut bytes = Vec::new();
    loop {
        let next = tokio::time::timeout_at(pace.next_by(bytes.len()), body.next()).await;
        let Ok(next) = next else {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "upload_too_slow",
                format!(
                    "the upload arrived too slowly (it must take at most {} s, and after the \
                     first seconds at least {} bytes/s)",
                    security.upload_deadline.as_secs(),
                    security.upload_min_bytes_per_sec
                ),
            ));
        };
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| {
            ApiError::bad_request("invalid_body", format!("could not read the body: {e}"))
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
