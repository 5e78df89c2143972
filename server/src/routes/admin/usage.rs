//! `GET /api/admin/usage?period=`: tokens per user and model (and the calls fallbacks
//! answered) for a period, from the usage ledger (the same numbers stored with each assistant message).

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use crate::auth::AdminUser;
use crate::budget::Period;
use crate::db::{self, models::audit, models::message_fallback, models::usage};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/usage", web::get().to(report));
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct UsageQuery {
    /// `day`, `week`, `month` (default) or `total`.
    period: Option<String>,
}

/// Tokens per user and model, and tool calls, over a budget period.
#[utoipa::path(get, path = "/api/admin/usage", tag = "admin", params(UsageQuery),
    responses((status = 200, description = "The report", body = crate::openapi::schemas::UsageReport)))]
async fn report(
    state: web::Data<AppState>,
    _admin: AdminUser,
    query: web::Query<UsageQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = query.period.as_deref().unwrap_or("month");
    let period = Period::parse(name).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_period",
            "period must be one of day, week, month, total",
        )
    })?;
    let now = (state.clock)();
    let from = period.start(now);
    let to = period.resets_at(now);
    let mut conn = db::conn(&state.pool).await?;
    let by_user = usage::by_user_and_model(&mut conn, from, to).await?;
    let tools = audit::tally_by_tool(&mut conn, from, to).await?;
    let by_assistant = usage::by_assistant(&mut conn, from, to).await?;
    let fallbacks = message_fallback::in_period(&mut conn, from, to).await?;
    let mut by_model: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    for row in &by_user {
        let e = by_model.entry(row.model.clone()).or_default();
        e.0 += row.input_tokens;
        e.1 += row.output_tokens;
    }
    let by_model: Vec<_> = by_model
        .into_iter()
        .map(|(model, (i, o))| {
            let stood_in: i64 = fallbacks
                .iter()
                .filter(|f| f.model == model)
                .map(|f| f.calls)
                .sum();
            json!({"model": model, "input_tokens": i, "output_tokens": o,
                   "fallback_calls": stood_in})
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "period": period,
        "from": from,
        "to": to,
        "by_user": by_user,
        "by_model": by_model,
        "by_assistant": by_assistant,
        "fallbacks": fallbacks,
        "tools": tools,
        "grafana_url": state.settings.telemetry.grafana_url,
    })))
}
