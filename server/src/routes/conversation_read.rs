//! `GET /api/conversations/{id}`: a conversation with a window of its latest messages; a
//! long one is read further back page by page (`?before=`), never loaded whole.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::{self, models::conversation, models::message_fallback, models::message_window};
use crate::error::ApiError;
use crate::state::AppState;

/// Messages in a window unless asked otherwise.
pub const DEFAULT_WINDOW: i64 = 200;
/// Most messages in one window.
pub const MAX_WINDOW: i64 = 500;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// Messages in the window, 1 to 500 (default 200).
    limit: Option<i64>,
    /// The `messages_before` cursor of a previous answer: the messages before it.
    before: Option<String>,
}

/// The cursor naming the messages before `seq`.
pub fn encode_cursor(seq: i64) -> String {
    format!("m{seq}")
}

pub fn decode_cursor(s: &str) -> Result<i64, ApiError> {
    s.strip_prefix('m')
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            ApiError::bad_request("invalid_cursor", "the cursor is not one this server issued")
        })
}

/// The cursor of the messages before `window`, when there are any.
pub fn cursor_before(window: &message_window::Window) -> Option<String> {
    window
        .more_before
        .then(|| window.messages.first().map(|m| encode_cursor(m.seq)))
        .flatten()
}

/// The window a query asks for.
pub fn window_of(query: &WindowQuery) -> Result<(Option<i64>, i64), ApiError> {
    let before = query.before.as_deref().map(decode_cursor).transpose()?;
    let limit = query.limit.unwrap_or(DEFAULT_WINDOW).clamp(1, MAX_WINDOW);
    Ok((before, limit))
}

/// One conversation with its latest messages (`messages_before`: the cursor of older ones).
#[utoipa::path(get, path = "/api/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path), WindowQuery),
    responses((status = 200, description = "The conversation", body = crate::openapi::schemas::ConversationDetail),
    (status = 400, description = "A cursor this server did not issue", body = crate::error::ErrorBody),
    (status = 404, description = "No such conversation of yours", body = crate::error::ErrorBody)))]
pub async fn get(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    query: web::Query<WindowQuery>,
) -> Result<HttpResponse, ApiError> {
    let (before, limit) = window_of(&query)?;
    let mut conn = db::conn(&state.pool).await?;
    let conv = conversation::find_owned(&mut conn, *id, who.id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    // The running turn first: one that ends between the two reads is then whole in the
    // messages (read the other way round, its answer and its claim could both be missing).
    let active = conversation::active_turn(&mut conn, conv.id).await?;
    let window = message_window::window(&mut conn, conv.id, before, limit).await?;
    let assistant = match conv.assistant_id {
        Some(a) => crate::assistants::store::name_of(&mut conn, a).await?,
        None => None,
    };
    let mut body = serde_json::to_value(&conv).map_err(ApiError::internal)?;
    // Named even once retired: the chat shows whose it was.
    body["assistant"] = assistant.map_or(
        json!(null),
        |(id, name, retired)| json!({"id": id, "name": name, "retired": retired}),
    );
    body["messages_before"] = json!(cursor_before(&window));
    let ids: Vec<Uuid> = window.messages.iter().map(|m| m.id).collect();
    let fallbacks = message_fallback::of_messages(&mut conn, &ids).await?;
    let mut messages = serde_json::to_value(window.messages).map_err(ApiError::internal)?;
    if let Some(items) = messages.as_array_mut() {
        items
            .iter_mut()
            .for_each(|m| message_fallback::annotate(m, &fallbacks));
    }
    body["messages"] = messages;
    // A reloaded page learns that a reply is still being generated.
    body["active_turn"] = active.map_or(
        json!(null),
        |id| json!({"id": id, "status": crate::domain::TurnState::Running}),
    );
    Ok(HttpResponse::Ok().json(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        assert_eq!(decode_cursor(&encode_cursor(42)).ok(), Some(42));
        for bad in ["", "m", "m-1", "x42", "m4 2", "m99999999999999999999"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
