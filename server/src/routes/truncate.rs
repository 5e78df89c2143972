//! `POST /api/conversations/{id}/truncate {from}`: takes the conversation back to before one of
//! the user's messages, so that it can be edited and sent again, or its answer regenerated.
//! The later messages are replaced, not kept; the tool calls they made stay in the audit log.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::{self, models::conversation, models::message};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{id}/truncate", web::post().to(truncate));
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TruncateBody {
    /// The user message to remove, with everything after it.
    from: Uuid,
}

/// Removes a user message and everything after it.
#[utoipa::path(post, path = "/api/conversations/{id}/truncate", tag = "conversations",
    params(("id" = Uuid, Path)), request_body = TruncateBody, responses(
    (status = 200, description = "Removed", body = crate::openapi::schemas::Truncated),
    (status = 404, description = "No such conversation, or no such message of yours in it", body = crate::error::ErrorBody),
    (status = 409, description = "A turn runs in this conversation", body = crate::error::ErrorBody)))]
pub async fn truncate(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<TruncateBody>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    if conversation::find_owned(&mut conn, *id, who.id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("conversation"));
    }
    match message::truncate_from(&mut conn, *id, body.from).await? {
        message::Truncated::Removed(n) => Ok(HttpResponse::Ok().json(json!({"removed": n}))),
        message::Truncated::NoSuchMessage => Err(ApiError::not_found("message")),
        message::Truncated::Busy => Err(ApiError::conflict(
            "turn_in_progress",
            "a reply is being generated in this conversation, or waits for an approval; \
             wait for it or cancel it first",
        )),
    }
}
