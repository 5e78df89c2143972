//! `GET /api/admin/changes`: the admin audit trail, newest first, filtered and paginated,
//! or exported as CSV.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::csv::{self, CsvWriter};
use crate::auth::AdminUser;
use crate::db::{self, models::admin_change};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/changes", web::get().to(list));
}

/// Longest filter value accepted.
const MAX_FILTER_CHARS: usize = 200;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ChangeQuery {
    /// The acting admin: an id or a username.
    actor: Option<String>,
    /// A kind (`user.delete`) or a kind prefix ending in `.` (`user.`).
    kind: Option<String>,
    /// Part of the target's name, or its id.
    target: Option<String>,
    since: Option<chrono::DateTime<chrono::Utc>>,
    until: Option<chrono::DateTime<chrono::Utc>>,
    limit: Option<i64>,
    /// The previous page's `next_cursor`.
    cursor: Option<i64>,
    /// `csv` for a CSV download of every matching row (also `Accept: text/csv`).
    format: Option<String>,
}

/// A page of the admin audit trail.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ChangePage {
    items: Vec<admin_change::AdminChange>,
    next_cursor: Option<i64>,
}

fn bounded(name: &str, v: Option<String>) -> Result<Option<String>, ApiError> {
    match v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()) {
        Some(s) if s.chars().count() > MAX_FILTER_CHARS => Err(ApiError::bad_request(
            "invalid_filter",
            format!("{name} is at most {MAX_FILTER_CHARS} characters"),
        )),
        other => Ok(other),
    }
}

/// Administrative changes, newest first (JSON pages, or CSV with the filters applied).
#[utoipa::path(get, path = "/api/admin/changes", tag = "admin", params(ChangeQuery),
    responses((status = 200, description = "A page of changes (or a CSV download)",
        content((ChangePage = "application/json"), (String = "text/csv"))),
        (status = 400, description = "A filter is not valid", body = crate::error::ErrorBody)))]
async fn list(
    req: HttpRequest,
    state: web::Data<AppState>,
    _admin: AdminUser,
    q: web::Query<ChangeQuery>,
) -> Result<HttpResponse, ApiError> {
    let q = q.into_inner();
    let as_csv = csv::wants_csv(&req, q.format.as_deref());
    let actor = bounded("actor", q.actor)?.map(|a| match uuid::Uuid::parse_str(&a) {
        Ok(id) => admin_change::ActorFilter::Id(id),
        Err(_) => admin_change::ActorFilter::Name(a),
    });
    let limit = if as_csv {
        csv::MAX_EXPORT_ROWS
    } else {
        q.limit.unwrap_or(50).clamp(1, 500)
    };
    let filter = admin_change::ChangeFilter {
        actor,
        kind: bounded("kind", q.kind)?,
        target: bounded("target", q.target)?,
        since: q.since,
        until: q.until,
        before_id: q.cursor,
        limit,
    };
    let mut conn = db::conn(&state.pool).await?;
    let rows = admin_change::list(&mut conn, &filter).await?;
    if as_csv {
        return Ok(to_csv(&rows).respond("admin-changes.csv"));
    }
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    Ok(HttpResponse::Ok().json(ChangePage {
        items: rows,
        next_cursor: next,
    }))
}

fn to_csv(rows: &[admin_change::AdminChange]) -> CsvWriter {
    let mut w = CsvWriter::new(&[
        "id",
        "time_utc",
        "actor",
        "actor_id",
        "kind",
        "target",
        "target_id",
        "before",
        "after",
    ]);
    let json =
        |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
    for r in rows {
        w.row([
            r.id.to_string(),
            csv::time(r.created_at),
            r.actor_name.clone(),
            csv::opt(r.actor_id),
            r.kind.clone(),
            r.target.clone(),
            csv::opt(r.target_id),
            json(&r.before),
            json(&r.after),
        ]);
    }
    w
}
