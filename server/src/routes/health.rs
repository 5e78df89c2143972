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
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process is up", body = crate::openapi::schemas::Health)))]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers; 503 otherwise. `providers` tells each model provider's circuit
/// breaker (an open one does not make the process unready: its models fall back).
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "The database answers", body = crate::openapi::schemas::Readiness),
    (status = 503, description = "The database is unreachable", body = crate::openapi::schemas::Readiness)))]
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let providers: serde_json::Map<String, serde_json::Value> = state
        .engine
        .breakers
        .all()
        .into_iter()
        .map(|(name, b)| (name, json!(b.state())))
        .collect();
    if db::is_ready(&state.pool, Duration::from_secs(2)).await {
        HttpResponse::Ok()
            .json(json!({"status": "ready", "database": "ok", "providers": providers}))
    } else {
        HttpResponse::ServiceUnavailable().json(json!({
            "status": "unavailable",
            "database": "unreachable",
            "providers": providers,
            "error": {"code": "unavailable", "message": "the database is unreachable"}
        }))
    }
}
