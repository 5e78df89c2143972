//! `GET /api/conversations/{id}/turns/{turn_id}/events`: re-attach to a turn (after a reload
//! or a dropped connection) from any server process. What the turn produced after the
//! client's last event id is replayed, then the live turn is followed to its end.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::state::AppState;
use crate::turn::EventId;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/conversations/{id}/turns/{turn_id}/events").route(web::get().to(events)),
    );
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct After {
    /// The last event id the client saw (as `Last-Event-ID`, which wins when both are sent).
    after: Option<String>,
}

/// The turn's events after the client's last one (`Last-Event-ID` header or `?after=`; none:
/// from its start), then the live turn until its `done` or `error`. Ids are places in the
/// turn (`0`, `{step}.{pos}`, `end`) that mean the same event on every process.
#[utoipa::path(get, path = "/api/conversations/{id}/turns/{turn_id}/events", tag = "conversations",
    params(("id" = Uuid, Path), ("turn_id" = Uuid, Path, description = "The turn's id: `active_turn.id`, or the `message_id` of its `turn_start`"),
        ("Last-Event-ID" = Option<String>, Header, description = "The last event id the client saw"),
        After),
    responses(
    (status = 200, description = "The turn's events after the given one, then the live turn",
        content((crate::openapi::schemas::SseEvent = "text/event-stream"), (crate::openapi::schemas::TurnSummary = "application/json"))),
    (status = 400, description = "The event id is not one this server gives", body = crate::error::ErrorBody),
    (status = 404, description = "No such turn in the user's conversation", body = crate::error::ErrorBody)))]
async fn events(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    path: web::Path<(Uuid, Uuid)>,
    query: web::Query<After>,
) -> Result<HttpResponse, ApiError> {
    let (conversation_id, turn_id) = path.into_inner();
    let header = req
        .headers()
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    let after = match header.or(query.after.as_deref()) {
        None => None,
        Some(id) => Some(EventId::parse(id).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_last_event_id",
                "the last event id must be one this server gave: 0, {step}.{pos} or end",
            )
        })?),
    };
    let follower = state
        .engine
        .follow(who.id, conversation_id, turn_id, after)
        .await?;
    super::messages::respond(&req, &state, follower).await
}
