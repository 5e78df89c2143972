//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::db;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz));
}

/// The process is up.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers; 503 otherwise.
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    if db::is_ready(&state.pool, Duration::from_secs(2)).await {
        HttpResponse::Ok().json(json!({"status": "ready", "database": "ok"}))
    } else {
        HttpResponse::ServiceUnavailable().json(json!({
            "status": "unavailable",
            "database": "unreachable",
            "error": {"code": "unavailable", "message": "the database is unreachable"}
        }))
    }
}
