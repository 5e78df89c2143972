//! `GET /api/admin/audit`: tool-call audit rows, newest first, filtered and paginated.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;

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
}

/// Tool-call audit rows, newest first.
#[utoipa::path(get, path = "/api/admin/audit", tag = "admin", params(AuditQuery),
    responses((status = 200, description = "A page of audit rows", body = crate::openapi::schemas::AuditPage)))]
async fn list(
    state: web::Data<AppState>,
    _admin: AdminUser,
    q: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let q = q.into_inner();
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
    let user_id = match q.user.as_deref().filter(|u| !u.is_empty()) {
        None => None,
        Some(u) => match uuid::Uuid::parse_str(u) {
            Ok(id) => Some(id),
            Err(_) => match user::find_by_username(&mut conn, u).await? {
                Some(found) => Some(found.id),
                None => {
                    return Ok(HttpResponse::Ok().json(json!({"items": [], "next_cursor": null})))
                }
            },
        },
    };
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    let filter = audit::AuditFilter {
        user_id,
        tool: q.tool.filter(|t| !t.is_empty()),
        outcome: q.outcome,
        decision: q.decision,
        since: q.since,
        until: q.until,
        before_id: q.cursor.or(q.before),
        limit,
    };
    let rows = audit::list(&mut conn, &filter).await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    Ok(HttpResponse::Ok().json(json!({"items": rows, "next_cursor": next})))
}
