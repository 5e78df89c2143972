//! Typed settings: built-in defaults, overridden by an optional TOML file, overridden by
//! environment variables. Secrets are wrapped so they never show up in logs or `Debug` output.

use std::path::Path;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// The default database: a local Postgres with trust auth.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/agentchat";

/// Minimum length of a configured JWT signing secret.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// Everything the server needs to start.
#[derive(Debug, Clone)]
pub struct Settings {
    pub database: DatabaseSettings,
    /// `host:port` to listen on; port 0 picks a free port.
    pub bind: String,
    pub auth: AuthSettings,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// `text` or `json` log lines.
    pub log_format: LogFormat,
    /// The model and the agent loop.
    pub llm: LlmSettings,
    /// Interval of SSE keep-alive comments; a vanished client is noticed at the next one.
    pub sse_keep_alive: Duration,
    /// Built-in tools: workspaces and HTTP fetching.
    pub tools: ToolSettings,
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`.
    pub metrics_token: Option<SecretString>,
    /// Where ops find the Grafana dashboard (linked from the usage view).
    pub grafana_url: Option<String>,
    /// MCP tool servers from the config file (`[[mcp_servers]]`); stdio ones only come from here.
    pub mcp_servers: Vec<crate::tools::mcp::McpServerConfig>,
}

/// Settings of the built-in tools.
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// A directory per user below this one holds the user's workspace files.
    pub workspace_dir: std::path::PathBuf,
    pub quota: crate::tools::Quota,
    /// `http_get` limits, domain allowlist, and the (test-only) private host:port escape hatch.
    pub http: crate::tools::HttpToolConfig,
}

/// Which upstream speaks for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, DeepSeek, ...).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// The built-in offline demo model.
    Demo,
}

/// The model and the agent loop.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    pub provider: ProviderKind,
    /// `https://api.openai.com/v1` style for OpenAI, `https://api.anthropic.com` for Anthropic.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    /// The default model.
    pub model: String,
    /// Models a conversation may pick (always includes `model`).
    pub models: Vec<String>,
    pub system_prompt: String,
    /// Model calls per turn before the turn stops with `max_iterations`.
    pub max_iterations: u32,
    /// Output cap per model call.
    pub max_output_tokens: u32,
    /// The model's context window; history is trimmed to fit.
    pub context_window_tokens: u64,
    /// Tool results larger than this are truncated with a note.
    pub tool_output_cap_bytes: usize,
    /// Ask the upstream to stream (`false` for endpoints that cannot).
    pub streaming: bool,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub idle_timeout: Duration,
    /// Bound on one model call.
    pub request_timeout: Duration,
    /// Bound on a whole turn; a claim older than this is considered abandoned.
    pub turn_timeout: Duration,
    pub max_retries: u32,
    pub retry_base_delay: Duration,
    /// Record prompts, tool arguments and results in spans (off unless explicitly enabled).
    pub capture_content: bool,
}

impl LlmSettings {
    fn defaults_for(provider: ProviderKind) -> Self {
        let (base_url, model) = match provider {
            ProviderKind::Openai => ("https://api.openai.com/v1", "gpt-4o-mini"),
            ProviderKind::Anthropic => ("https://api.anthropic.com", "claude-sonnet-4-5"),
            ProviderKind::Demo => ("", "demo"),
        };
        Self {
            provider,
            base_url: base_url.to_owned(),
            api_key: None,
            model: model.to_owned(),
            models: vec![model.to_owned()],
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            max_iterations: 8,
            max_output_tokens: 1024,
            context_window_tokens: 32_768,
            tool_output_cap_bytes: 16 * 1024,
            streaming: true,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(300),
            turn_timeout: Duration::from_secs(600),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            capture_content: false,
        }
    }
}

/// The system prompt when none is configured.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are AgentChat, a helpful assistant for a team. \
You can call tools that run on the server; use them when they help, and answer concisely. \
When a tool returns an error, read it and correct your call or explain the problem.";

/// How to reach Postgres.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    pub url: DatabaseUrl,
    pub pool_size: usize,
    /// How long a request waits for a pooled connection before answering 503.
    pub acquire_timeout: Duration,
    /// Create the database named in the URL when it does not exist.
    pub create_if_missing: bool,
    /// How often budget holds of crashed processes are looked for (each look is one
    /// transaction, whether or not it finds any).
    pub hold_sweep_interval: Duration,
}

/// Accounts and tokens.
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// `None`: a random secret is generated once and kept in the database.
    pub jwt_secret: Option<SecretString>,
    pub registration: Registration,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    /// Password hashes computed at once; more wait (argon2 needs ~19 MiB each).
    pub max_concurrent_hashes: usize,
    /// Failed logins for one account before it is slowed down.
    pub account_failure_limit: u32,
    /// Failed logins from one client address per window before it is refused.
    pub address_failure_limit: u32,
    /// Mark the browser's refresh-token cookie `Secure` (browsers accept it on localhost).
    pub cookie_secure: bool,
}

/// Whether anyone may create an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    Open,
    Closed,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

/// A Postgres URL whose password is redacted in `Debug`.
#[derive(Clone)]
pub struct DatabaseUrl(SecretString);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(SecretString::from(url.into()))
    }

    /// The full URL, password included: only for opening connections.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// The URL with any password replaced, safe to log.
    pub fn redacted(&self) -> String {
        match url::Url::parse(self.expose()) {
            Ok(mut u) => {
                if u.password().is_some() {
                    let _ = u.set_password(Some("REDACTED"));
                }
                u.to_string()
            }
            Err(_) => "<unparseable database url>".to_owned(),
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
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
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: String,
        source: toml::de::Error,
    },
    #[error("invalid value for {name}: {reason}")]
    Invalid { name: &'static str, reason: String },
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            database: DatabaseSettings {
                url: DatabaseUrl::new(DEFAULT_DATABASE_URL),
                pool_size: 16,
                acquire_timeout: Duration::from_secs(2),
                create_if_missing: true,
                hold_sweep_interval: Duration::from_secs(30),
            },
            bind: "127.0.0.1:8080".to_owned(),
            auth: AuthSettings {
                jwt_secret: None,
                registration: Registration::Open,
                access_token_ttl: Duration::from_secs(15 * 60),
                refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
                max_concurrent_hashes: std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
                    .max(2),
                account_failure_limit: 5,
                address_failure_limit: 30,
                cookie_secure: true,
            },
            max_body_bytes: 1024 * 1024,
            log_format: LogFormat::Text,
            llm: LlmSettings::defaults_for(ProviderKind::Demo),
            sse_keep_alive: Duration::from_secs(10),
            tools: ToolSettings {
                workspace_dir: std::path::PathBuf::from("data/workspaces"),
                quota: crate::tools::Quota::default(),
                http: crate::tools::HttpToolConfig::default(),
            },
            metrics_token: None,
            grafana_url: None,
            mcp_servers: Vec::new(),
        }
    }
}

/// The optional TOML file: every key may be left out.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    database_url: Option<String>,
    database_pool_size: Option<usize>,
    database_acquire_timeout_ms: Option<u64>,
    hold_sweep_secs: Option<u64>,
    bind: Option<String>,
    jwt_secret: Option<String>,
    registration: Option<Registration>,
    access_token_ttl_secs: Option<u64>,
    refresh_token_ttl_secs: Option<u64>,
    max_body_bytes: Option<usize>,
    log_format: Option<LogFormat>,
    llm: Option<FileLlm>,
    #[serde(default)]
    mcp_servers: Vec<crate::tools::mcp::McpServerConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLlm {
    provider: Option<ProviderKind>,
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    models: Option<Vec<String>>,
    system_prompt: Option<String>,
    max_iterations: Option<u32>,
    max_output_tokens: Option<u32>,
    context_window_tokens: Option<u64>,
    tool_output_cap_bytes: Option<usize>,
    streaming: Option<bool>,
    request_timeout_secs: Option<u64>,
    max_retries: Option<u32>,
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
        let file = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.display().to_string(),
                    source,
                })?;
                toml::from_str(&text).map_err(|source| ConfigError::Parse {
                    path: p.display().to_string(),
                    source,
                })?
            }
            None => FileSettings::default(),
        };
        let mut s = Settings::default();
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());

        if let Some(v) = env("DATABASE_URL").or(file.database_url) {
            s.database.url = DatabaseUrl::new(v);
        }
        if let Some(v) =
            parse_env(&env, "AGENTCHAT_DATABASE_POOL_SIZE")?.or(file.database_pool_size)
        {
            s.database.pool_size = v.max(1);
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_DATABASE_ACQUIRE_TIMEOUT_MS")?
            .or(file.database_acquire_timeout_ms)
        {
            s.database.acquire_timeout = Duration::from_millis(v);
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_HOLD_SWEEP_SECS")?.or(file.hold_sweep_secs) {
            s.database.hold_sweep_interval = Duration::from_secs(v.max(1));
        }
        if let Some(v) = env("AGENTCHAT_BIND").or(file.bind) {
            s.bind = v;
        }
        if let Some(v) = env("AGENTCHAT_JWT_SECRET").or(file.jwt_secret) {
            s.auth.jwt_secret = Some(SecretString::from(v));
        }
        if let Some(v) = env("AGENTCHAT_REGISTRATION") {
            s.auth.registration = match v.trim() {
                "open" => Registration::Open,
                "closed" => Registration::Closed,
                other => {
                    return Err(ConfigError::Invalid {
                        name: "AGENTCHAT_REGISTRATION",
                        reason: format!("expected `open` or `closed`, got `{other}`"),
                    })
                }
            };
        } else if let Some(v) = file.registration {
            s.auth.registration = v;
        }
        if let Some(v) =
            parse_env(&env, "AGENTCHAT_ACCESS_TOKEN_TTL_SECS")?.or(file.access_token_ttl_secs)
        {
            s.auth.access_token_ttl = Duration::from_secs(v.max(1));
        }
        if let Some(v) =
            parse_env(&env, "AGENTCHAT_REFRESH_TOKEN_TTL_SECS")?.or(file.refresh_token_ttl_secs)
        {
            s.auth.refresh_token_ttl = Duration::from_secs(v.max(1));
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_COOKIE_SECURE")? {
            s.auth.cookie_secure = v;
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_MAX_BODY_BYTES")?.or(file.max_body_bytes) {
            s.max_body_bytes = v;
        }
        if let Some(v) = env("AGENTCHAT_LOG_FORMAT") {
            s.log_format = match v.trim() {
                "json" => LogFormat::Json,
                "text" => LogFormat::Text,
                other => {
                    return Err(ConfigError::Invalid {
                        name: "AGENTCHAT_LOG_FORMAT",
                        reason: format!("expected `text` or `json`, got `{other}`"),
                    })
                }
            };
        } else if let Some(v) = file.log_format {
            s.log_format = v;
        }
        s.llm = load_llm(&env, file.llm.unwrap_or_default())?;
        if let Some(v) = env("AGENTCHAT_GRAFANA_URL") {
            s.grafana_url = Some(v.trim().to_owned());
        }
        if let Some(v) = env("AGENTCHAT_METRICS_TOKEN") {
            s.metrics_token = Some(SecretString::from(v));
        }
        if let Some(v) = env("AGENTCHAT_WORKSPACE_DIR") {
            s.tools.workspace_dir = v.into();
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_WORKSPACE_MAX_BYTES")? {
            s.tools.quota.max_bytes = v;
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_WORKSPACE_MAX_FILES")? {
            s.tools.quota.max_files = v;
        }
        if let Some(v) = parse_env(&env, "AGENTCHAT_WORKSPACE_MAX_FILE_BYTES")? {
            s.tools.quota.max_file_bytes = v;
        }
        if let Some(v) = env("AGENTCHAT_HTTP_ALLOWED_DOMAINS") {
            s.tools.http.allowed_domains = split_list(&v);
        }
        if let Some(v) = env("AGENTCHAT_HTTP_ALLOW_PRIVATE_HOST_PORTS") {
            s.tools.http.allow_private_host_ports = split_list(&v);
        }
        // --- MCP servers (issue 18): from the file only; checked in `validate`.
        s.mcp_servers = file.mcp_servers;
        // --- end MCP servers
        s.validate()?;
        Ok(s)
    }

    /// Refuses settings the server must not start with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(secret) = &self.auth.jwt_secret {
            if secret.expose_secret().len() < MIN_JWT_SECRET_BYTES {
                return Err(ConfigError::Invalid {
                    name: "AGENTCHAT_JWT_SECRET",
                    reason: format!(
                        "the JWT secret must be at least {MIN_JWT_SECRET_BYTES} bytes long; \
                         generate one with `openssl rand -base64 48`, or leave it unset to let the \
                         server generate and store one"
                    ),
                });
            }
        }
        if let Err(reason) = crate::tools::mcp::config::validate_all(&self.mcp_servers) {
            return Err(ConfigError::Invalid {
                name: "mcp_servers",
                reason,
            });
        }
        if url::Url::parse(self.database.url.expose()).is_err() {
            return Err(ConfigError::Invalid {
                name: "DATABASE_URL",
                reason: "not a valid postgres:// URL".to_owned(),
            });
        }
        Ok(())
    }
}

fn load_llm(
    env: &impl Fn(&str) -> Option<String>,
    file: FileLlm,
) -> Result<LlmSettings, ConfigError> {
    let provider = match env("AGENTCHAT_LLM_PROVIDER") {
        Some(v) => match v.trim() {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            "demo" => ProviderKind::Demo,
            other => {
                return Err(ConfigError::Invalid {
                    name: "AGENTCHAT_LLM_PROVIDER",
                    reason: format!("expected `openai`, `anthropic` or `demo`, got `{other}`"),
                })
            }
        },
        None => file.provider.unwrap_or(ProviderKind::Demo),
    };
    let mut l = LlmSettings::defaults_for(provider);
    if let Some(v) = env("AGENTCHAT_LLM_BASE_URL").or(file.base_url) {
        l.base_url = v.trim().trim_end_matches('/').to_owned();
    }
    if let Some(v) = env("AGENTCHAT_LLM_API_KEY").or(file.api_key) {
        l.api_key = Some(SecretString::from(v));
    }
    if let Some(v) = env("AGENTCHAT_LLM_MODEL").or(file.model) {
        l.model = v.trim().to_owned();
    }
    let listed = env("AGENTCHAT_LLM_MODELS")
        .map(|v| {
            v.split(',')
                .map(|m| m.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .or(file.models)
        .unwrap_or_default();
    l.models = std::iter::once(l.model.clone())
        .chain(listed.into_iter().filter(|m| !m.is_empty()))
        .fold(Vec::new(), |mut acc, m| {
            if !acc.contains(&m) {
                acc.push(m);
            }
            acc
        });
    if let Some(v) = env("AGENTCHAT_SYSTEM_PROMPT").or(file.system_prompt) {
        l.system_prompt = v;
    }
    if let Some(v) = parse_env(env, "AGENTCHAT_MAX_ITERATIONS")?.or(file.max_iterations) {
        l.max_iterations = v.clamp(1, 100);
    }
    if let Some(v) = parse_env(env, "AGENTCHAT_LLM_MAX_OUTPUT_TOKENS")?.or(file.max_output_tokens) {
        l.max_output_tokens = v.max(1);
    }
    if let Some(v) =
        parse_env(env, "AGENTCHAT_LLM_CONTEXT_WINDOW_TOKENS")?.or(file.context_window_tokens)
    {
        l.context_window_tokens = v.max(256);
    }
    if let Some(v) =
        parse_env(env, "AGENTCHAT_TOOL_OUTPUT_CAP_BYTES")?.or(file.tool_output_cap_bytes)
    {
        l.tool_output_cap_bytes = v.max(256);
    }
    if let Some(v) = parse_env(env, "AGENTCHAT_LLM_STREAMING")?.or(file.streaming) {
        l.streaming = v;
    }
    if let Some(v) = parse_env(env, "AGENTCHAT_LLM_TIMEOUT_SECS")?.or(file.request_timeout_secs) {
        l.request_timeout = Duration::from_secs(v.max(1));
    }
    if let Some(v) = parse_env(env, "AGENTCHAT_LLM_MAX_RETRIES")?.or(file.max_retries) {
        l.max_retries = v.min(10);
    }
    if let Some(v) = parse_env(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")? {
        l.capture_content = v;
    }
    if provider != ProviderKind::Demo && url::Url::parse(&l.base_url).is_err() {
        return Err(ConfigError::Invalid {
            name: "AGENTCHAT_LLM_BASE_URL",
            reason: format!("`{}` is not a valid URL", l.base_url),
        });
    }
    Ok(l)
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|x| x.trim().to_owned())
        .filter(|x| !x.is_empty())
        .collect()
}

fn parse_env<T: std::str::FromStr>(
    env: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<T>, ConfigError>
where
    T::Err: std::fmt::Display,
{
    env(name)
        .map(|v| {
            v.trim().parse::<T>().map_err(|e| ConfigError::Invalid {
                name,
                reason: e.to_string(),
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::load_from(None, |k| map.get(k).cloned())
    }

    #[test]
    fn defaults_point_at_local_postgres() {
        let s = load(&[]).unwrap();
        assert_eq!(s.database.url.expose(), DEFAULT_DATABASE_URL);
        assert_eq!(s.bind, "127.0.0.1:8080");
        assert!(s.auth.jwt_secret.is_none());
        assert_eq!(s.llm.provider, ProviderKind::Demo);
        assert_eq!(s.llm.max_iterations, 8);
        assert_eq!(s.database.hold_sweep_interval, Duration::from_secs(30));
    }

    #[test]
    fn the_hold_sweep_interval_is_at_least_a_second() {
        let every = |v: &str| {
            load(&[("AGENTCHAT_HOLD_SWEEP_SECS", v)]).map(|s| s.database.hold_sweep_interval)
        };
        assert_eq!(every("86400").unwrap(), Duration::from_secs(86400));
        assert_eq!(every("0").unwrap(), Duration::from_secs(1));
        assert!(every("soon").is_err());
    }

    #[test]
    fn llm_settings_from_env() {
        let s = load(&[
            ("AGENTCHAT_LLM_PROVIDER", "openai"),
            ("AGENTCHAT_LLM_BASE_URL", "http://127.0.0.1:9/v1/"),
            ("AGENTCHAT_LLM_API_KEY", "sk-secret-key-value"),
            ("AGENTCHAT_LLM_MODEL", "qwen"),
            ("AGENTCHAT_LLM_MODELS", "qwen, llama,qwen"),
        ])
        .unwrap();
        assert_eq!(s.llm.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(s.llm.models, ["qwen", "llama"]);
        assert!(!format!("{s:?}").contains("sk-secret-key-value"));
        assert!(load(&[("AGENTCHAT_LLM_PROVIDER", "gpt")]).is_err());
    }

    #[test]
    fn short_jwt_secret_is_refused() {
        let err = load(&[("AGENTCHAT_JWT_SECRET", "short")]).unwrap_err();
        assert!(err.to_string().contains("at least 32 bytes"), "{err}");
    }

    #[test]
    fn secrets_never_appear_in_debug_output() {
        let s = load(&[
            (
                "AGENTCHAT_JWT_SECRET",
                "0123456789abcdef0123456789abcdef-very-secret",
            ),
            (
                "DATABASE_URL",
                "postgres://app:hunter2pass@db:5432/agentchat",
            ),
        ])
        .unwrap();
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("very-secret"), "{dbg}");
        assert!(!dbg.contains("hunter2pass"), "{dbg}");
        assert!(dbg.contains("REDACTED"), "{dbg}");
    }

    #[test]
    fn bad_registration_value_is_refused() {
        assert!(load(&[("AGENTCHAT_REGISTRATION", "maybe")]).is_err());
        let s = load(&[("AGENTCHAT_REGISTRATION", "closed")]).unwrap();
        assert_eq!(s.auth.registration, Registration::Closed);
    }

    #[test]
    fn file_is_overridden_by_env() {
        let dir = std::env::temp_dir().join(format!("agentchat-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agentchat.toml");
        std::fs::write(
            &path,
            "bind = \"0.0.0.0:9000\"\nregistration = \"closed\"\n",
        )
        .unwrap();
        let s = Settings::load_from(Some(&path), |k| {
            (k == "AGENTCHAT_BIND").then(|| "127.0.0.1:9001".to_owned())
        })
        .unwrap();
        assert_eq!(s.bind, "127.0.0.1:9001");
        assert_eq!(s.auth.registration, Registration::Closed);
        let _ = std::fs::remove_dir_all(dir);
    }
}
