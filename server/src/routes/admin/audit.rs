//! `GET /api/admin/audit`: tool-call audit rows, newest first, filtered and paginated, or
//! exported as CSV.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::csv::{self, CsvWriter};
use crate::auth::AdminUser;
use crate::db::{self, models::audit, models::user};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/audit", web::get().to(list));
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// A user id or a username.
    user: Option<String>,
    tool: Option<String>,
    outcome: Option<String>,
    /// The decision on calls that needed approval: `approved`, `denied`, `expired`, or
    /// `none` for calls that needed none.
    decision: Option<String>,
    since: Option<chrono::DateTime<chrono::Utc>>,
    until: Option<chrono::DateTime<chrono::Utc>>,
    limit: Option<i64>,
    /// The previous page's `next_cursor`.
    cursor: Option<i64>,
    /// Same as `cursor` (the name in the API contract).
    before: Option<i64>,
    /// `csv` for a CSV download of every matching row (also `Accept: text/csv`).
    format: Option<String>,
}

/// Tool-call audit rows, newest first.
#[utoipa::path(get, path = "/api/admin/audit", tag = "admin", params(AuditQuery),
    responses((status = 200, description = "A page of audit rows (or a CSV download)",
        content((crate::openapi::schemas::AuditPage = "application/json"), (String = "text/csv")))))]
async fn list(
    req: HttpRequest,
    state: web::Data<AppState>,
    _admin: AdminUser,
    q: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let q = q.into_inner();
    let as_csv = csv::wants_csv(&req, q.format.as_deref());
    if q.user.as_ref().is_some_and(|u| u.len() > 200)
        || q.tool.as_ref().is_some_and(|t| t.len() > 200)
    {
        return Err(ApiError::bad_request(
            "invalid_filter",
            "user and tool filters are at most 200 characters",
        ));
    }
    if let Some(o) = &q.outcome {
        if !["ok", "error", "refused", "timeout"].contains(&o.as_str()) {
            return Err(ApiError::bad_request(
                "invalid_outcome",
                "outcome must be one of ok, error, refused, timeout",
            ));
        }
    }
    if let Some(d) = &q.decision {
        if !["approved", "denied", "expired", "none"].contains(&d.as_str()) {
            return Err(ApiError::bad_request(
                "invalid_decision",
                "decision must be one of approved, denied, expired, none",
            ));
        }
    }
    let mut conn = db::conn(&state.pool).await?;
    // A name nobody has now may be a deleted account's: its rows keep the name.
    let (user_id, username) = match q.user.as_deref().filter(|u| !u.is_empty()) {
        None => (None, None),
        Some(u) => match uuid::Uuid::parse_str(u) {
            Ok(id) => (Some(id), None),
            Err(_) => match user::find_by_username(&mut conn, u).await? {
                Some(found) => (Some(found.id), None),
                None => (None, Some(u.to_owned())),
            },
        },
    };
    let limit = if as_csv {
        csv::MAX_EXPORT_ROWS
    } else {
        q.limit.unwrap_or(50).clamp(1, 500)
    };
    let filter = audit::AuditFilter {
        user_id,
        username,
        tool: q.tool.filter(|t| !t.is_empty()),
        outcome: q.outcome,
        decision: q.decision,
        since: q.since,
        until: q.until,
        before_id: q.cursor.or(q.before),
        limit,
    };
    let rows = audit::list(&mut conn, &filter).await?;
    if as_csv {
        return Ok(to_csv(&rows).respond("tool-call-audit.csv"));
    }
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    Ok(HttpResponse::Ok().json(json!({"items": rows, "next_cursor": next})))
}

fn to_csv(rows: &[audit::AuditRow]) -> CsvWriter {
    let mut w = CsvWriter::new(&[
        "id",
        "time_utc",
        "user",
        "user_id",
        "conversation_id",
        "tool",
        "tool_call_id",
        "arguments",
        "arguments_truncated",
        "outcome",
        "error",
        "duration_ms",
        "result_bytes",
        "approval_policy",
        "approval_decision",
        "approval_decided_by",
        "approval_note",
        "approval_decided_at_utc",
        "trace_id",
    ]);
    for r in rows {
        w.row([
            r.id.to_string(),
            csv::time(r.created_at),
            r.username.clone(),
            csv::opt(r.user_id),
            csv::opt(r.conversation_id),
            r.tool.clone(),
            r.tool_call_id.clone(),
            r.arguments.to_string(),
            r.arguments_truncated.to_string(),
            r.outcome.clone(),
            r.error.clone().unwrap_or_default(),
            r.duration_ms.to_string(),
            r.result_bytes.to_string(),
            r.approval_policy.clone().unwrap_or_default(),
            r.approval_decision.clone().unwrap_or_default(),
            r.approval_decided_by.clone().unwrap_or_default(),
            r.approval_note.clone().unwrap_or_default(),
            csv::opt(r.approval_decided_at.map(csv::time)),
            r.trace_id.clone().unwrap_or_default(),
        ]);
    }
    w
}
