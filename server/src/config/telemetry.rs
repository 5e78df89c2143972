//! `[telemetry]`: logs, metrics and trace export.

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::serde_util::{millis, secret};
use super::ConfigError;

/// Logs, metrics and trace export.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// `text` or `json` log lines (`RUST_LOG` sets the level).
    pub log_format: LogFormat,
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`.
    #[serde(with = "secret")]
    pub metrics_token: Option<SecretString>,
    /// Where ops find the Grafana dashboard (linked from the usage view).
    pub grafana_url: Option<String>,
    /// OTLP collector base URL; unset: no spans are exported.
    pub otlp_endpoint: Option<String>,
    /// `http/protobuf` or `grpc`.
    pub otlp_protocol: String,
    /// `service.name` of exported spans.
    pub service_name: String,
    /// How long spans wait in the batch before export.
    #[serde(rename = "batch_delay_ms", with = "millis")]
    pub batch_delay: Duration,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            log_format: LogFormat::Text,
            metrics_token: None,
            grafana_url: None,
            otlp_endpoint: None,
            otlp_protocol: "http/protobuf".to_owned(),
            service_name: "agentchat".to_owned(),
            batch_delay: Duration::from_millis(5000),
        }
    }
}

impl TelemetrySettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !matches!(self.otlp_protocol.as_str(), "http/protobuf" | "grpc") {
            return Err(ConfigError::invalid(
                "telemetry.otlp_protocol",
                format!(
                    "`{}`: expected `http/protobuf` or `grpc`",
                    self.otlp_protocol
                ),
            ));
        }
        for (key, url) in [
            ("telemetry.otlp_endpoint", &self.otlp_endpoint),
            ("telemetry.grafana_url", &self.grafana_url),
        ] {
            if let Some(u) = url {
                if url::Url::parse(u).is_err() {
                    return Err(ConfigError::invalid(
                        key,
                        format!("`{u}` is not a valid URL"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}
