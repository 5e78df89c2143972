//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::extract::AdminUser;
use crate::catalogue::breaker::BreakerState;
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

/// The database answers; 503 otherwise. `breakers` counts the model providers' circuit
/// breakers by state (an open one does not make the process unready: its models fall
/// back); an admin's bearer token also gets `providers`, each provider's state by name
/// (the names are not for anyone who can reach the port), and `sandbox`, the code
/// interpreter's isolation here with the reason when it is unavailable.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "The database answers", body = crate::openapi::schemas::Readiness),
    (status = 503, description = "The database is unreachable", body = crate::openapi::schemas::Readiness)))]
async fn readyz(state: web::Data<AppState>, admin: Option<AdminUser>) -> HttpResponse {
    let all = state.catalogue.breakers().all();
    let mut breakers = serde_json::Map::new();
    for s in BreakerState::ALL {
        let n = all.iter().filter(|(_, b)| b.state() == s).count();
        breakers.insert(s.as_str().to_owned(), json!(n));
    }
    let mut body = if db::is_ready(&state.pool, Duration::from_secs(2)).await {
        json!({"status": "ready", "database": "ok", "breakers": breakers})
    } else {
        json!({
            "status": "unavailable",
            "database": "unreachable",
            "breakers": breakers,
            "error": {"code": "unavailable", "message": "the database is unreachable"}
        })
    };
    if admin.is_some() {
        let providers: serde_json::Map<String, serde_json::Value> = all
            .into_iter()
            .map(|(name, b)| (name, json!(b.state())))
            .collect();
        body["providers"] = json!(providers);
        body["sandbox"] = json!(state.sandbox.isolation());
    }
    if body["database"] == "ok" {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
