//! Per-request observability: a server span per HTTP request (continuing an incoming W3C
//! `traceparent`), and the request count and latency metrics by route pattern.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::metrics::Metrics;

struct HeaderExtractor<'a>(&'a actix_web::http::header::HeaderMap);

impl opentelemetry::propagation::Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Middleware body: wraps the request in a span and records its metrics.
pub async fn observe(
    metrics: Arc<Metrics>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!(
        "HTTP request",
        otel.name = %method,
        otel.kind = "server",
        http.request.method = %method,
        url.path = %req.path(),
        http.route = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let parent = opentelemetry::global::get_text_map_propagator(|p| {
        p.extract(&HeaderExtractor(req.headers()))
    });
    span.set_parent(parent);
    let res = next.call(req).instrument(span.clone()).await?;
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let status = res.status();
    span.record("http.route", route.as_str());
    span.record("otel.name", format!("{method} {route}"));
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    metrics
        .http_requests
        .with_label_values(&[&route, &method, status.as_str()])
        .inc();
    metrics
        .http_duration
        .with_label_values(&[&route, &method])
        .observe(started.elapsed().as_secs_f64());
    Ok(res)
}
