//! Logging and tracing: a `tracing` subscriber that logs (text or JSON) and, when the standard
//! `OTEL_EXPORTER_OTLP_*` variables name a collector, exports spans over OTLP (HTTP/protobuf or
//! gRPC). With no endpoint configured nothing is exported and the OpenTelemetry layer is not
//! installed at all. Also a `spawn_blocking` that keeps the caller's span.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::TracerProvider;
use tracing_subscriber::layer::{Layer as _, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter};

use crate::config::{LogFormat, TelemetrySettings};

/// Flushes and shuts the span exporter down when dropped (at process exit).
pub struct TelemetryGuard {
    provider: Option<TracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            let _ = p.shutdown();
        }
    }
}

/// Installs the global subscriber per the settings. Safe to call more than once (the first
/// call wins).
pub fn init(settings: &TelemetrySettings) -> TelemetryGuard {
    let provider = match otlp_provider(settings) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentchat: OpenTelemetry export disabled: {e}");
            None
        }
    };
    install(settings.log_format, provider.clone(), "info");
    TelemetryGuard { provider }
}

/// Installs the global subscriber with an explicit tracer provider (tests pass one with an
/// in-memory exporter). `default_log_level` applies to log lines when `RUST_LOG` is unset;
/// spans go to the exporter at `info` and above regardless.
pub fn install(format: LogFormat, provider: Option<TracerProvider>, default_log_level: &str) {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let logs =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_log_level));
    let otel = provider.map(|p| {
        let tracer = p.tracer("agentchat");
        opentelemetry::global::set_tracer_provider(p);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(EnvFilter::new("info"))
    });
    let base = tracing_subscriber::registry().with(otel);
    let _ = match format {
        LogFormat::Json => base
            .with(fmt::layer().json().with_target(false).with_filter(logs()))
            .try_init(),
        LogFormat::Text => base
            .with(
                fmt::layer()
                    .with_target(false)
                    .with_ansi(crate::banner::use_colour())
                    .with_filter(logs()),
            )
            .try_init(),
    };
}

/// An OTLP exporter per the settings, or `None` when no endpoint is set. The endpoint is the
/// collector's base URL (as `OTEL_EXPORTER_OTLP_ENDPOINT`): HTTP appends `/v1/traces`;
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, when set, is the full traces URL and wins.
fn otlp_provider(settings: &TelemetrySettings) -> anyhow::Result<Option<TracerProvider>> {
    let traces_url = std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty());
    let base = settings
        .otlp_endpoint
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty());
    if traces_url.is_none() && base.is_none() {
        return Ok(None);
    }
    let exporter = match settings.otlp_protocol.as_str() {
        "grpc" => {
            let endpoint = traces_url.or(base.map(str::to_owned)).unwrap_or_default();
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint)
                .build()?
        }
        "http/protobuf" => {
            let endpoint = traces_url.unwrap_or_else(|| {
                format!(
                    "{}/v1/traces",
                    base.unwrap_or_default().trim_end_matches('/')
                )
            });
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(endpoint)
                .build()?
        }
        other => {
            anyhow::bail!("OTLP protocol `{other}` is not supported (use grpc or http/protobuf)")
        }
    };
    let batch = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_scheduled_delay(settings.batch_delay)
        .build();
    let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(
        exporter,
        opentelemetry_sdk::runtime::Tokio,
    )
    .with_batch_config(batch)
    .build();
    let provider = TracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(opentelemetry_sdk::Resource::new([
            KeyValue::new("service.name", settings.service_name.clone()),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        ]))
        .build();
    Ok(Some(provider))
}

/// The OpenTelemetry trace and span ids of the current span (hex), when exporting.
pub fn current_trace_ids() -> (Option<String>, Option<String>) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    if sc.is_valid() {
        (
            Some(sc.trace_id().to_string()),
            Some(sc.span_id().to_string()),
        )
    } else {
        (None, None)
    }
}

/// Runs blocking work on the blocking pool inside the current span.
pub fn spawn_blocking_with_tracing<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f))
}
