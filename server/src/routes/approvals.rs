//! `/api/approvals`: the caller's tool calls that wait for a decision, and deciding one
//! (`POST /api/approvals/{id}`; with `Accept: text/event-stream` the turn it lets go on is
//! streamed in the answer). Admins list everyone's at `/api/admin/approvals`.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db;
use crate::domain::ApprovalState;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::turn::{Approval, ApprovalFilter, Decider, Decision};

/// Longest accepted decision note, in characters.
pub const MAX_NOTE_CHARS: usize = 1000;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/approvals", web::get().to(list))
        .route("/approvals/{id}", web::post().to(decide));
}

/// Filters of a listing.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalQuery {
    /// `pending`, `approved`, `denied` or `expired`.
    pub state: Option<String>,
    /// Only the calls of this conversation.
    pub conversation: Option<Uuid>,
    /// 1 to 200 (default 50).
    pub limit: Option<i64>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<chrono::DateTime<chrono::Utc>>,
}

impl ApprovalQuery {
    /// The listing filter (400 for an unknown state).
    pub fn filter(&self, user_id: Option<Uuid>) -> Result<ApprovalFilter, ApiError> {
        let state = match &self.state {
            Some(s) => Some(s.parse::<ApprovalState>().map_err(|_| {
                ApiError::bad_request(
                    "invalid_state",
                    "state must be one of pending, approved, denied, expired",
                )
            })?),
            None => None,
        };
        Ok(ApprovalFilter {
            user_id,
            state,
            conversation_id: self.conversation,
            before: self.cursor,
            limit: self.limit.unwrap_or(50).clamp(1, 200),
        })
    }
}

/// A page of approvals as `{items, next_cursor}`.
pub async fn page(state: &AppState, filter: ApprovalFilter) -> Result<HttpResponse, ApiError> {
    let rows = state.engine.approvals(&filter).await?;
    let next = (rows.len() as i64 == filter.limit)
        .then(|| rows.last().map(|r| r.created_at))
        .flatten();
    Ok(HttpResponse::Ok().json(json!({"items": rows, "next_cursor": next})))
}

/// The caller's own tool calls that wait (or waited) for a decision, newest first.
#[utoipa::path(get, path = "/api/approvals", tag = "approvals", params(ApprovalQuery),
    responses((status = 200, description = "A page of the caller's approvals",
        body = crate::openapi::schemas::ApprovalPage)))]
async fn list(
    state: web::Data<AppState>,
    who: AuthUser,
    q: web::Query<ApprovalQuery>,
) -> Result<HttpResponse, ApiError> {
    page(&state, q.filter(Some(who.id))?).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    /// `approve` or `deny`.
    decision: String,
    /// Why (shown to the model when denied, and kept in the audit row); at most 1000 characters.
    note: Option<String>,
}

/// Approves or denies a waiting call. When it was the last call of its step to be decided,
/// the turn goes on: streamed in this answer with `Accept: text/event-stream`, else in the
/// background (`resumed: true`).
#[utoipa::path(post, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = Uuid, Path)), request_body = DecisionBody, responses(
    (status = 200, description = "Recorded; or the resumed turn's events",
        content((crate::openapi::schemas::DecisionResult = "application/json"),
                (crate::openapi::schemas::SseEvent = "text/event-stream"))),
    (status = 403, description = "A member deciding an admin approval, or an admin deciding a call only its user decides", body = crate::error::ErrorBody),
    (status = 409, description = "Already decided, or expired", body = crate::error::ErrorBody)))]
async fn decide(
    req: HttpRequest,
    state: web::Data<AppState>,
    who: AuthUser,
    id: web::Path<Uuid>,
    Json(body): Json<DecisionBody>,
) -> Result<HttpResponse, ApiError> {
    let decision = match body.decision.as_str() {
        "approve" => Decision::Approve,
        "deny" => Decision::Deny,
        _ => {
            return Err(ApiError::bad_request(
                "invalid_decision",
                "decision must be `approve` or `deny`",
            ))
        }
    };
    let note = body
        .note
        .map(|n| db::pg_safe_text(n.trim()).into_owned())
        .filter(|n| !n.is_empty());
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ApiError::bad_request(
            "invalid_note",
            format!("note must be at most {MAX_NOTE_CHARS} characters"),
        ));
    }
    let decider = Decider {
        id: who.id,
        username: who.username.clone(),
        is_admin: who.is_admin(),
    };
    let follow = wants_stream(&req);
    let outcome = state
        .engine
        .decide(*id, &decider, decision, note, follow)
        .await?;
    let a = &outcome.approval;
    if who.is_admin() && (a.approver == crate::domain::Approver::Admin || a.user_id != who.id) {
        record_admin_decision(&state, &who, a).await;
    }
    let answered = json!({"approval": outcome.approval, "resumed": outcome.resumed});
    let Some(follower) = outcome.follower else {
        return Ok(HttpResponse::Ok().json(answered));
    };
    // Streaming another user's turn to an admin is reading their conversation: recorded
    // like any other reading, before it is shown (unrecorded, the turn runs on unseen).
    if a.user_id != who.id && !record_reading(&state, &who, a).await {
        return Ok(HttpResponse::Ok().json(answered));
    }
    super::messages::respond(&req, &state, follower).await
}

/// Writes the `conversation.view` row of an admin who follows a user's resumed turn;
/// `false` when it could not be written.
async fn record_reading(state: &AppState, who: &AuthUser, a: &Approval) -> bool {
    use crate::db::models::admin_change::NewChange;
    let change = NewChange::by(
        who,
        "conversation.view",
        format!("{} of {}", a.conversation_id, a.username),
    )
    .id(a.conversation_id)
    .after(
        json!({"conversation_id": a.conversation_id, "owner": a.username,
                  "owner_id": a.user_id, "via": "approval.decide"}),
    );
    match record(state, change).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, approval = %a.id, "could not record an admin's reading; not streaming the turn");
            false
        }
    }
}

/// An admin's decision enters the admin audit trail (after the decision's own transaction,
/// which the agent owns; a failure to record is logged, the decision stands).
async fn record_admin_decision(state: &AppState, who: &AuthUser, a: &Approval) {
    use crate::db::models::admin_change::NewChange;
    let change = NewChange::by(
        who,
        "approval.decide",
        format!("{} for {}", a.tool, a.username),
    )
    .id(a.id)
    .before(
        json!({"state": crate::domain::ApprovalState::Pending, "tool": a.tool, "user": a.username,
                       "conversation_id": a.conversation_id, "arguments": a.arguments}),
    )
    .after(json!({"state": a.state, "note": a.note}));
    if let Err(e) = record(state, change).await {
        tracing::error!(error = %e, approval = %a.id, "could not record an admin's approval decision");
    }
}

/// Writes an admin-trail row on a connection of its own.
async fn record(
    state: &AppState,
    change: crate::db::models::admin_change::NewChange,
) -> Result<(), String> {
    let mut conn = db::conn(&state.pool).await.map_err(|e| e.to_string())?;
    crate::db::models::admin_change::record(&mut conn, change)
        .await
        .map_err(|e| e.to_string())
}

fn wants_stream(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}
