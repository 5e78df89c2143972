//! Typed settings in one place: built-in defaults, overridden by an optional TOML file,
//! overridden by environment variables (figment layers them). Each section lives in its own
//! file; `env.rs` names the variable of every setting (the optional features' in
//! `env_features.rs`); `report.rs` shows where each value came from (`agentchat config
//! check`). Secrets are wrapped so that neither `Debug` nor the report shows them.

mod auth;
pub mod catalogue;
mod database;
mod durable;
pub mod env;
mod env_features;
mod knowledge;
mod llm;
mod memory;
pub mod report;
mod sandbox;
pub mod search;
pub mod serde_util;
mod sharing;
mod sso;
mod suggest;
mod telemetry;
mod tools;

use std::path::Path;
use std::time::Duration;

use figment::providers::{Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

pub use auth::{AuthSettings, Registration, MIN_JWT_SECRET_BYTES};
pub use catalogue::{InputKind, ModelConfig, PriceConfig, ProviderConfig};
pub use database::{DatabaseSettings, DatabaseUrl, DEFAULT_DATABASE_URL};
pub use durable::DurableSettings;
pub use knowledge::{EmbeddingModelConfig, KnowledgeSettings, DEMO_EMBEDDING_MODEL};
pub use llm::{BreakerSettings, LlmSettings, ProviderKind, DEFAULT_SYSTEM_PROMPT};
pub use memory::MemorySettings;
pub use sandbox::{SandboxSettings, MAX_TIMEOUT_SECS as MAX_SANDBOX_TIMEOUT_SECS};
pub use search::{SearchKind, SearchProviderConfig, SearchSettings};
pub use sharing::SharingSettings;
pub use sso::{OidcSettings, PasswordLogin, ScimSettings};
pub use telemetry::{LogFormat, TelemetrySettings};
pub use tools::ToolSettings;

use serde_util::secs;

/// Everything the server needs to start. Field paths are the TOML file's keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// `host:port` to listen on; port 0 picks a free port.
    pub bind: String,
    /// The address users open in the browser (for the start message and links);
    /// unset: `http://` + `bind`.
    pub public_url: Option<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Connections the kernel may hold for us before we accept them: a burst of thousands
    /// of clients connecting at once overflows a short queue, and the overflow waits for
    /// SYN retries (seconds) or times out. The kernel caps it at `net.core.somaxconn`.
    pub listen_backlog: u32,
    /// How long a new connection has to deliver a request's headers before it is answered
    /// 408 (actix's default is 5 s). The clock runs from when a worker takes the connection,
    /// so in a burst of thousands a busy worker, not the client, can run it out.
    #[serde(rename = "request_head_timeout_secs", with = "secs")]
    pub request_head_timeout: Duration,
    /// Interval of SSE keep-alive comments; a vanished client is noticed at the next one.
    #[serde(rename = "sse_keep_alive_secs", with = "secs")]
    pub sse_keep_alive: Duration,
    pub database: DatabaseSettings,
    pub auth: AuthSettings,
    /// The model and the agent loop.
    pub llm: LlmSettings,
    /// Upstream endpoints of the model catalogue (`[[providers]]`); none: `[llm]`'s.
    pub providers: Vec<ProviderConfig>,
    /// The catalogue's models (`[[models]]`); none: `llm.models` on the `[llm]` provider.
    pub models: Vec<ModelConfig>,
    /// Built-in tools: workspaces and HTTP fetching.
    pub tools: ToolSettings,
    /// Logs, metrics, trace export.
    pub telemetry: TelemetrySettings,
    /// Trusted proxies, session limits, upload concurrency, allowed origins.
    pub security: crate::security::SecuritySettings,
    /// Durable turns: replica liveness, shutdown drain.
    pub durable: DurableSettings,
    /// MCP tool servers (`[[mcp_servers]]`); stdio ones come only from here, never from the
    /// admin API. Header and environment values are shown hidden.
    #[serde(serialize_with = "serde_util::mcp_servers_hidden")]
    pub mcp_servers: Vec<crate::tools::mcp::McpServerConfig>,
    /// Single sign-on (OpenID Connect) and whether passwords still sign people in.
    pub oidc: OidcSettings,
    /// SCIM 2.0 provisioning by the identity provider.
    pub scim: ScimSettings,
    /// Document collections the agent searches.
    pub knowledge: KnowledgeSettings,
    /// The catalogue's embedding models (`[[embedding_models]]`).
    pub embedding_models: Vec<EmbeddingModelConfig>,
    /// How much a user's memory notes may hold.
    pub memory: MemorySettings,
    /// How fast shared links may be read.
    pub sharing: SharingSettings,
    /// The code interpreter's jail.
    pub sandbox: SandboxSettings,
    /// Web search: personal data stripping, queries per user, breakers.
    pub search: SearchSettings,
    /// Web search providers (`[[search_providers]]`); keys are shown hidden.
    pub search_providers: Vec<SearchProviderConfig>,
    /// How large an uploaded image may be, the long edge it is stored at, and the decoder's
    /// memory and concurrency.
    pub images: crate::files::ImageLimits,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".to_owned(),
            public_url: None,
            max_body_bytes: 1024 * 1024,
            listen_backlog: 16_384,
            request_head_timeout: Duration::from_secs(30),
            sse_keep_alive: Duration::from_secs(10),
            database: DatabaseSettings::default(),
            auth: AuthSettings::default(),
            llm: LlmSettings::default(),
            providers: Vec::new(),
            models: Vec::new(),
            tools: ToolSettings::default(),
            telemetry: TelemetrySettings::default(),
            security: crate::security::SecuritySettings::default(),
            durable: DurableSettings::default(),
            mcp_servers: Vec::new(),
            oidc: OidcSettings::default(),
            scim: ScimSettings::default(),
            knowledge: KnowledgeSettings::default(),
            embedding_models: Vec::new(),
            memory: MemorySettings::default(),
            sharing: SharingSettings::default(),
            sandbox: SandboxSettings::default(),
            search: SearchSettings::default(),
            search_providers: Vec::new(),
            images: crate::files::ImageLimits::default(),
        }
    }
}

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Parse(String),
    #[error("invalid value for `{key}`{from}: {reason}")]
    Invalid {
        key: String,
        from: String,
        reason: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_owned(),
            from: where_set(key),
            reason: reason.into(),
        }
    }
}

/// " (AGENTCHAT_X)" naming the variable of `key`, for messages.
fn where_set(key: &str) -> String {
    env::var_for(key)
        .map(|v| format!(" ({})", v.name))
        .unwrap_or_default()
}

impl Settings {
    /// Loads defaults, then `path` (if given), then the process environment.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(path, |name| std::env::var(name).ok())
    }

    /// Like [`Settings::load`] with an explicit environment (for tests).
    pub fn load_from(
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut figment = Figment::new();
        if let Some(p) = path {
            check_readable(p)?;
            figment = figment.merge(Toml::file_exact(p));
        }
        figment = figment.merge(Serialized::defaults(env::layer(&env)?));
        let mut settings: Settings = figment.extract_lossy().map_err(|e| describe(e, path))?;
        settings.llm.fill_vendor_defaults();
        settings.validate()?;
        Ok(settings)
    }

    /// Refuses settings the server must not start with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.bind.trim().is_empty() {
            return Err(ConfigError::invalid("bind", "must be host:port"));
        }
        if let Some(u) = &self.public_url {
            if url::Url::parse(u).is_err() {
                return Err(ConfigError::invalid(
                    "public_url",
                    format!("`{u}` is not a valid URL"),
                ));
            }
        }
        if self.max_body_bytes < 1024 {
            return Err(ConfigError::invalid(
                "max_body_bytes",
                "must be at least 1024",
            ));
        }
        if self.listen_backlog == 0 || i32::try_from(self.listen_backlog).is_err() {
            return Err(ConfigError::invalid(
                "listen_backlog",
                "must be between 1 and 2147483647",
            ));
        }
        if self.request_head_timeout.is_zero() {
            return Err(ConfigError::invalid(
                "request_head_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.sse_keep_alive.is_zero() {
            return Err(ConfigError::invalid(
                "sse_keep_alive_secs",
                "must be at least 1",
            ));
        }
        self.database.validate()?;
        self.auth.validate()?;
        self.llm.validate()?;
        catalogue::validate(&self.llm, &self.providers, &self.models)?;
        self.tools.validate()?;
        self.search.validate(&self.search_providers)?;
        self.telemetry.validate()?;
        self.security.validate()?;
        self.durable.validate()?;
        self.oidc.validate()?;
        self.scim.validate()?;
        self.memory.validate()?;
        self.sharing.validate()?;
        self.sandbox.validate()?;
        if let Some((key, reason)) = self.images.invalid() {
            return Err(ConfigError::invalid(key, reason));
        }
        let providers: Vec<&str> = if self.providers.is_empty() {
            vec!["default"]
        } else {
            self.providers.iter().map(|p| p.name.as_str()).collect()
        };
        self.knowledge
            .validate(&self.embedding_models, &providers)?;
        crate::tools::mcp::config::validate_all(&self.mcp_servers)
            .map_err(|reason| ConfigError::invalid("mcp_servers", reason))
    }

    /// The address users open: `public_url`, or one made from `bind` (a wildcard host
    /// becomes `127.0.0.1`).
    pub fn browser_url(&self, port: u16) -> String {
        if let Some(u) = &self.public_url {
            return u.trim_end_matches('/').to_owned();
        }
        let host = self
            .bind
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or("127.0.0.1");
        let host = match host {
            "0.0.0.0" | "[::]" | "" => "127.0.0.1",
            h => h,
        };
        format!("http://{host}:{port}")
    }
}

/// A missing or unreadable file is an error, not an empty layer.
fn check_readable(p: &Path) -> Result<(), ConfigError> {
    std::fs::File::open(p)
        .map(drop)
        .map_err(|source| ConfigError::Read {
            path: p.display().to_string(),
            source,
        })
}

/// Turns figment's error into one that names the key, where it was set and, for an unknown
/// key, the closest valid one.
fn describe(e: figment::Error, file: Option<&Path>) -> ConfigError {
    use figment::error::Kind;
    let path = e.path.join(".");
    let source = match &e.metadata {
        Some(m) if !m.name.contains("TOML") => {
            let key = if path.is_empty() {
                String::new()
            } else {
                path.clone()
            };
            env::var_for(&key)
                .map(|v| format!("environment variable {}", v.name))
                .unwrap_or_else(|| "the environment".to_owned())
        }
        _ => file
            .map(|p| format!("config file {}", p.display()))
            .unwrap_or_else(|| "the settings".to_owned()),
    };
    let msg = match &e.kind {
        Kind::UnknownField(field, expected) => {
            let parent = match e.path.split_last() {
                Some((last, parent)) if last == field => parent.join("."),
                _ => path.clone(),
            };
            let under = |name: &str| {
                if parent.is_empty() {
                    name.to_owned()
                } else {
                    format!("{parent}.{name}")
                }
            };
            let full = under(field);
            let hint = suggest::closest(field, expected.iter().copied())
                .map(|c| format!("; did you mean `{}`?", under(c)))
                .unwrap_or_else(|| format!("; valid keys here: {}", expected.join(", ")));
            format!("unknown setting `{full}` in {source}{hint}")
        }
        Kind::Message(m) if file.is_some() && path.is_empty() => {
            format!("invalid {source}: {m}")
        }
        other => {
            let key = if path.is_empty() {
                "settings".to_owned()
            } else {
                format!("`{path}`")
            };
            format!("invalid value for {key} in {source}: {other}")
        }
    };
    ConfigError::Parse(msg)
}

#[cfg(test)]
mod tests;
