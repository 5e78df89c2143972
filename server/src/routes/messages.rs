//! `POST /api/conversations/{id}/messages` (one agent turn, streamed as SSE or returned as
//! one JSON document) and `POST /api/conversations/{id}/cancel`.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_lab::sse;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::auth::{AuthUser, SignedToken};
use crate::db::models::idempotency::IdempotencyKey;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::turn::{EventId, Follower, NewTurn, TurnEvent};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{id}/messages", web::post().to(post_message))
        .route("/conversations/{id}/cancel", web::post().to(cancel));
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    /// The question, 1 to 32 000 characters (may be empty when files are attached).
    content: String,
    /// Files of the caller's workspace (`/api/files`) to attach: at most 10 paths, each a
    /// valid workspace path of an existing file (422 otherwise). The model is told their
    /// names and sizes and reads them with its file tools.
    #[serde(default)]
    #[schema(max_items = 10)]
    attachments: Vec<String>,
}

/// Runs one agent turn: a `text/event-stream` of turn events (`turn_start`, `text_delta`,
/// `tool_call`, `tool_result`, `usage`, `done`, `error`; each `data:` is the event's JSON,
/// each `id:` its place in the turn), or with `Accept: application/json` the finished turn as
/// one document. The turn goes on if the client leaves; it can re-attach with
/// `GET .../turns/{turn_id}/events`. A retry with the same `Idempotency-Key` follows the
/// turn the first request started.
#[utoipa::path(post, path = "/api/conversations/{id}/messages", tag = "conversations",
    params(("id" = Uuid, Path)), request_body = MessageBody, responses(
    (status = 200, description = "The turn's events as they happen, or its summary",
        content((crate::openapi::schemas::SseEvent = "text/event-stream"), (crate::openapi::schemas::TurnSummary = "application/json"))),
    (status = 403, description = "The caller's role may not use the conversation's model (`model_not_allowed`, naming the role)", body = crate::error::ErrorBody),
    (status = 409, description = "A turn already runs in this conversation, a call waits for approval, the conversation is full (`conversation_full`), or its model is no longer served (`model_unavailable`)", body = crate::error::ErrorBody),
    (status = 422, description = "An attachment is not a file of the caller's workspace, or there are too many", body = crate::error::ErrorBody),
    (status = 429, description = "The token budget is used up or held by running turns", body = crate::error::ErrorBody)))]
async fn post_message(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: SignedToken,
    id: web::Path<Uuid>,
    Json(body): Json<MessageBody>,
) -> Result<HttpResponse, ApiError> {
    let message = NewTurn {
        content: &body.content,
        attachments: &body.attachments,
        idempotency: idempotency_key(&req, *id, &body)?,
    };
    let follower = state.engine.send(token, *id, message).await?;
    respond(&req, &state, follower).await
}

/// A followed turn as the client asked: SSE, or (`Accept: application/json`) one document
/// once it has ended.
pub(super) async fn respond(
    req: &HttpRequest,
    state: &AppState,
    mut follower: Follower,
) -> Result<HttpResponse, ApiError> {
    if wants_json(req) {
        let mut events = Vec::new();
        while let Some((_, e)) = follower.next().await {
            events.push(e);
        }
        return Ok(HttpResponse::Ok().json(summarise(events)));
    }
    let open = StreamGauge::open(state.metrics.active_streams.clone());
    // Every event carries its place in the turn as its SSE `id`.
    let stream = futures_util::stream::unfold((follower, open), |(mut f, open)| async move {
        f.next().await.map(|(id, e)| (to_sse(&e, id), (f, open)))
    });
    Ok(super::event_stream::respond(
        req,
        stream,
        state.settings.sse_keep_alive,
    ))
}

/// Stops the conversation's running turn.
#[utoipa::path(post, path = "/api/conversations/{id}/cancel", tag = "conversations", params(("id" = Uuid, Path)),
    responses(
    (status = 202, description = "The running turn was told to stop", body = crate::openapi::schemas::CancelOutcome),
    (status = 200, description = "No turn runs in this process", body = crate::openapi::schemas::CancelOutcome)))]
async fn cancel(
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let outcome = state.engine.cancel(who.id, *id).await?;
    let status = if outcome.cancelled || outcome.requested == Some(true) {
        actix_web::http::StatusCode::ACCEPTED
    } else {
        actix_web::http::StatusCode::OK
    };
    Ok(HttpResponse::build(status).json(outcome))
}

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 200;

/// The request's `Idempotency-Key` (400 when it is not 1–200 visible ASCII characters).
fn idempotency_key(
    req: &HttpRequest,
    conversation_id: Uuid,
    body: &MessageBody,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(v) = req.headers().get("idempotency-key") else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(k)
            if (1..=MAX_IDEMPOTENCY_KEY).contains(&k.len())
                && k.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Ok(Some(IdempotencyKey::new(
                k,
                conversation_id,
                &body.content,
                &body.attachments,
            )))
        }
        _ => Err(ApiError::bad_request(
            "invalid_idempotency_key",
            format!("Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"),
        )),
    }
}

/// Counts an open SSE stream until the response body is dropped (finished or client gone).
struct StreamGauge(prometheus::IntGauge);

impl StreamGauge {
    fn open(gauge: prometheus::IntGauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for StreamGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}

fn wants_json(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/event-stream"))
}

fn to_sse(e: &TurnEvent, id: EventId) -> sse::Event {
    sse::Event::Data(sse::Data::new(e.to_json()).event(e.name()).id(id.to_sse()))
}

/// The finished turn as one document: the final answer, the finish reason, and every event.
fn summarise(events: Vec<TurnEvent>) -> serde_json::Value {
    let mut answer = String::new();
    let mut finish = json!(null);
    let mut message_id = json!(null);
    let mut error = json!(null);
    let (mut input_tokens, mut output_tokens) = (0u64, 0u64);
    for e in &events {
        match e {
            TurnEvent::TextDelta { text } => answer.push_str(text),
            TurnEvent::ToolCall(_) => answer.clear(),
            TurnEvent::Usage {
                input_tokens: i,
                output_tokens: o,
            } => {
                input_tokens += i;
                output_tokens += o;
            }
            TurnEvent::Done {
                message_id: m,
                finish_reason,
            } => {
                finish = json!(finish_reason);
                message_id = json!(m);
            }
            TurnEvent::Error(e) => {
                error = json!({"code": e.code, "message": e.message});
            }
            _ => {}
        }
    }
    json!({
        "message_id": message_id,
        "finish_reason": finish,
        "content": answer,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        "error": error,
        "events": events,
    })
}
