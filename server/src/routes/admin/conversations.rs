//! `GET /api/admin/conversations/{id}`: any user's conversation, read-only, for an admin
//! following an audit row. Each view is itself recorded in the admin audit trail.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use uuid::Uuid;

use crate::auth::AdminUser;
use crate::db;
use crate::db::models::admin_change::{self, NewChange};
use crate::db::models::{conversation, message, user};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{id}", web::get().to(get));
}

/// A conversation as an admin reads it: who owns it, and every message, tool call and
/// tool result.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminConversation {
    #[serde(flatten)]
    conversation: conversation::Conversation,
    owner_id: Uuid,
    owner: String,
    messages: Vec<message::Message>,
}

/// One user's conversation, read-only; the view is audited.
#[utoipa::path(get, path = "/api/admin/conversations/{id}", tag = "admin", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The conversation with its owner", body = AdminConversation),
    (status = 404, description = "No such conversation", body = crate::error::ErrorBody)))]
async fn get(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let conv = conversation::find_any(&mut conn, *id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    let owner = user::find(&mut conn, conv.user_id)
        .await?
        .map(|u| u.username)
        .unwrap_or_default();
    let messages = message::list(&mut conn, conv.id).await?;
    // Recorded before the answer: a view that could not be audited is not shown.
    let change = NewChange::by(
        &admin.0,
        "conversation.view",
        format!("{} of {owner}", conv.id),
    )
    .id(conv.id)
    .after(
        serde_json::json!({"conversation_id": conv.id, "owner": owner, "owner_id": conv.user_id}),
    );
    admin_change::record(&mut conn, change).await?;
    Ok(HttpResponse::Ok().json(AdminConversation {
        owner_id: conv.user_id,
        owner,
        messages,
        conversation: conv,
    }))
}
