//! `GET /metrics`: Prometheus text format, optionally behind a bearer token.

use std::time::Duration;

use actix_web::{http::header, web, HttpRequest, HttpResponse};
use secrecy::ExposeSecret;

use crate::db;
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(metrics));
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("metrics_token" = [])),
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain", body = String),
        (status = 401, description = "A metrics token is configured and was not presented", body = crate::error::ErrorBody)))]
async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if let Some(expected) = &state.settings.metrics_token {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if presented != Some(expected.expose_secret()) {
            return Err(ApiError::unauthorized(
                "a valid metrics bearer token is required",
            ));
        }
    }
    let m = &state.metrics;
    for (i, shard) in state.pool.status().iter().enumerate() {
        let label = i.to_string();
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.db_pool
            .with_label_values(&[label.as_str(), "idle"])
            .set(gauge(shard.available));
        m.db_pool
            .with_label_values(&[label.as_str(), "in_use"])
            .set(gauge(shard.size.saturating_sub(shard.available)));
        m.db_pool_max
            .with_label_values(&[label.as_str()])
            .set(gauge(shard.max_size));
        m.db_pool_waiting
            .with_label_values(&[label.as_str()])
            .set(gauge(shard.waiting));
    }
    m.db_up.set(i64::from(
        db::is_ready(&state.pool, Duration::from_secs(1)).await,
    ));
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(m.render()))
}
