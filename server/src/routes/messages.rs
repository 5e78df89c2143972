//! `POST /api/conversations/{id}/messages` (one agent turn, streamed as SSE or returned as
//! one JSON document) and `POST /api/conversations/{id}/cancel`.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse, Responder};
use actix_web_lab::sse;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tracing::Instrument;
use uuid::Uuid;

use crate::agent::TurnEvent;
use crate::auth::{AuthUser, SignedToken};
use crate::db::{self, models::conversation, models::turn};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

/// Events buffered per stream before the turn waits for a slow client.
const EVENT_BUFFER: usize = 256;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{id}/messages", web::post().to(post_message))
        .route("/conversations/{id}/cancel", web::post().to(cancel));
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    content: String,
}

/// Runs one agent turn: a `text/event-stream` of turn events (`turn_start`, `text_delta`,
/// `tool_call`, `tool_result`, `usage`, `done`, `error`; each `data:` is the event's JSON),
/// or with `Accept: application/json` the finished turn as one document.
#[utoipa::path(post, path = "/api/conversations/{id}/messages", tag = "conversations",
    params(("id" = Uuid, Path)), request_body = MessageBody, responses(
    (status = 200, description = "The turn's events as they happen, or its summary",
        content((crate::agent::TurnEvent = "text/event-stream"), (crate::openapi::schemas::TurnSummary = "application/json"))),
    (status = 409, description = "A turn already runs in this conversation", body = crate::error::ErrorBody),
    (status = 429, description = "The token budget is used up or held by running turns", body = crate::error::ErrorBody)))]
async fn post_message(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: SignedToken,
    id: web::Path<Uuid>,
    Json(body): Json<MessageBody>,
) -> Result<HttpResponse, ApiError> {
    let prepared = state.agent.prepare(token, *id, &body.content).await?;
    let (control, guard) = state
        .turns
        .register(prepared.conversation_id, prepared.turn_id);
    let (tx, mut rx) = mpsc::channel(EVENT_BUFFER);
    let agent = state.agent.clone();
    let (turn_id, conversation_id) = (prepared.turn_id, prepared.conversation_id);
    let outstanding = prepared.outstanding.clone();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = agent.llm.provider_name(),
        gen_ai.request.model = %prepared.model,
        gen_ai.conversation.id = %conversation_id,
    );
    let running = tokio::spawn(
        async move {
            let _guard = guard;
            agent.run(prepared, tx, control).await;
        }
        .instrument(span),
    );
    let agent = state.agent.clone();
    tokio::spawn(async move {
        if let Err(e) = running.await {
            if e.is_panic() {
                tracing::error!(%conversation_id, "a turn panicked; releasing its budget and conversation");
                let hold = outstanding.lock().ok().and_then(|mut o| o.take());
                agent.abandon(turn_id, conversation_id, hold).await;
            }
        }
    });

    if wants_json(&req) {
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        return Ok(HttpResponse::Ok().json(summarise(events)));
    }
    let open = StreamGauge::open(state.metrics.active_streams.clone());
    let stream = futures_util::stream::unfold((rx, open), |(mut rx, open)| async move {
        rx.recv().await.map(|e| (to_sse(&e), (rx, open)))
    });
    Ok(sse::Sse::from_infallible_stream(stream)
        .with_keep_alive(state.settings.sse_keep_alive)
        .customize()
        .insert_header(("X-Accel-Buffering", "no"))
        .respond_to(&req)
        .map_into_boxed_body())
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
    let mut conn = db::conn(&state.pool).await?;
    if conversation::find_owned(&mut conn, *id, who.id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("conversation"));
    }
    if state.turns.cancel(*id) {
        return Ok(HttpResponse::Accepted().json(json!({"cancelled": true})));
    }
    let running_elsewhere = turn::is_active(&mut conn, *id).await?;
    Ok(HttpResponse::Ok().json(json!({"cancelled": false, "running": running_elsewhere})))
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

fn to_sse(e: &TurnEvent) -> sse::Event {
    sse::Event::Data(sse::Data::new(e.to_json()).event(e.name()))
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
