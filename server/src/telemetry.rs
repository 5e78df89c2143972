//! Logging setup and a `spawn_blocking` that keeps the caller's span.

use tracing_subscriber::{fmt, EnvFilter};

use crate::config::LogFormat;

/// Installs the global subscriber; `RUST_LOG` overrides the default level. Safe to call twice.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = fmt().with_env_filter(filter).with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
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
