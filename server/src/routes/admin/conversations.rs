//! `GET /api/admin/conversations/{id}`: any user's conversation, read-only, for an admin
//! following an audit row. Each view is itself recorded in the admin audit trail.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use uuid::Uuid;

use crate::auth::{AdminUser, AuthUser};
use crate::db;
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::models::{conversation, message, message_window, user};
use crate::error::ApiError;
use crate::routes::conversation_read::{cursor_before, window_of, WindowQuery};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{id}", web::get().to(get));
}

/// A conversation as an admin reads it: who owns it, and its latest messages, tool calls
/// and tool results (older ones page by page, `?before=`, as the owner reads them).
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminConversation {
    #[serde(flatten)]
    conversation: conversation::Conversation,
    owner_id: Uuid,
    owner: String,
    messages: Vec<message::Message>,
    /// Older messages exist: ask for them with `?before=` this cursor.
    messages_before: Option<String>,
}

/// One user's conversation, read-only; the view is audited.
#[utoipa::path(get, path = "/api/admin/conversations/{id}", tag = "admin",
    params(("id" = Uuid, Path), crate::routes::conversation_read::WindowQuery),
    responses((status = 200, description = "The conversation with its owner", body = AdminConversation),
    (status = 400, description = "A cursor this server did not issue", body = crate::error::ErrorBody),
    (status = 404, description = "No such conversation", body = crate::error::ErrorBody)))]
async fn get(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
    query: web::Query<WindowQuery>,
) -> Result<HttpResponse, ApiError> {
    let (before, limit) = window_of(&query)?;
    let mut conn = db::conn(&state.pool).await?;
    let conv = conversation::find_any(&mut conn, *id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    let owner = user::find(&mut conn, conv.user_id)
        .await?
        .map(|u| u.username)
        .unwrap_or_default();
    // Recorded before the answer: a view that could not be audited is not shown.
    let view = View {
        who: &admin.0,
        conv: &conv,
        owner: &owner,
        before,
        limit,
    };
    let window = admin_change::apply(&mut conn, view).await?;
    let messages_before = cursor_before(&window);
    Ok(HttpResponse::Ok().json(AdminConversation {
        owner_id: conv.user_id,
        owner,
        messages: window.messages,
        messages_before,
        conversation: conv,
    }))
}

/// An admin's reading of a conversation's messages: audited like a change.
struct View<'a> {
    who: &'a AuthUser,
    conv: &'a conversation::Conversation,
    owner: &'a str,
    before: Option<i64>,
    limit: i64,
}

#[async_trait::async_trait]
impl AdminWrite for View<'_> {
    type Output = message_window::Window;
    type Error = diesel::result::Error;

    async fn write(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
    ) -> Result<Self::Output, Self::Error> {
        message_window::window(conn, self.conv.id, self.before, self.limit).await
    }

    fn trail(&self, _: &Self::Output) -> Option<NewChange> {
        let (id, owner) = (self.conv.id, self.owner);
        Some(
            NewChange::by(self.who, "conversation.view", format!("{id} of {owner}"))
                .id(id)
                .after(serde_json::json!({"conversation_id": id, "owner": owner, "owner_id": self.conv.user_id})),
        )
    }
}
