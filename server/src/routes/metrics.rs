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

/// Compares SHA-256 digests byte by byte without an early exit, so the time taken says
/// nothing about how much of the token was right (nor, through the digest, its length).
fn constant_time_eq(a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    let (x, y) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    x.iter()
        .zip(y.iter())
        .fold(0u8, |acc, (p, q)| acc | (p ^ q))
        == 0
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("metrics_token" = [])),
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain", body = String),
        (status = 401, description = "A metrics token is configured and was not presented", body = crate::error::ErrorBody)))]
async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if let Some(expected) = &state.settings.telemetry.metrics_token {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !presented.is_some_and(|p| constant_time_eq(p, expected.expose_secret())) {
            return Err(ApiError::unauthorized(
                "a valid metrics bearer token is required",
            ));
        }
    }
    let m = &state.metrics;
    for (provider, breaker) in state.catalogue.breakers().all() {
        let now = breaker.state();
        for s in crate::catalogue::breaker::BreakerState::ALL {
            m.provider_breaker_state
                .with_label_values(&[provider.as_str(), s.as_str()])
                .set(i64::from(s == now));
        }
    }
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
    m.mcp_server_state.reset();
    m.mcp_tools_offered.reset();
    for server in state.mcp.servers() {
        let name = server.config.name.as_str();
        let now = server.status().state;
        for s in crate::tools::mcp::State::ALL {
            m.mcp_server_state
                .with_label_values(&[name, s.as_str()])
                .set(i64::from(s == now));
        }
        m.mcp_tools_offered
            .with_label_values(&[name])
            .set(i64::try_from(server.offered()).unwrap_or(i64::MAX));
    }
    m.turn_starts_waiting
        .set(i64::try_from(state.pool.starts_waiting()).unwrap_or(i64::MAX));
    m.db_up.set(i64::from(
        db::is_ready(&state.pool, Duration::from_secs(1)).await,
    ));
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(m.render()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_comparison() {
        assert!(super::constant_time_eq("s3cret-token", "s3cret-token"));
        assert!(!super::constant_time_eq("s3cret-token", "s3cret-tokem"));
        assert!(!super::constant_time_eq("s3cret", "s3cret-token"));
        assert!(!super::constant_time_eq("", "x"));
    }
}
