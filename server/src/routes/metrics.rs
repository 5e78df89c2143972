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
    let status = state.pool.status();
    let m = &state.metrics;
    let idle = i64::try_from(status.available).unwrap_or(0);
    let size = i64::try_from(status.size).unwrap_or(0);
    m.db_pool.with_label_values(&["idle"]).set(idle);
    m.db_pool
        .with_label_values(&["in_use"])
        .set((size - idle).max(0));
    m.db_up.set(i64::from(
        db::is_ready(&state.pool, Duration::from_secs(1)).await,
    ));
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(m.render()))
}
