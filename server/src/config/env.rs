//! The environment layer: every setting's variable name, read into the same key paths the
//! TOML file uses. Names are kept as the README has always documented them.

use serde_json::{Map, Value};

/// A setting that the environment can set.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    /// The variable, e.g. `AGENTCHAT_LLM_MODEL`.
    pub name: &'static str,
    /// Its key in the settings (and in the TOML file), e.g. `llm.model`.
    pub key: &'static str,
    /// How the value is written.
    pub form: Form,
}

/// How an environment variable writes its setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The value as it is.
    Text,
    /// A comma-separated list.
    List,
    /// JSON, for lists of tables (`[[mcp_servers]]` in the file).
    Json,
}

pub(super) const fn var(name: &'static str, key: &'static str) -> EnvVar {
    EnvVar {
        name,
        key,
        form: Form::Text,
    }
}

pub(super) const fn list(name: &'static str, key: &'static str) -> EnvVar {
    EnvVar {
        name,
        key,
        form: Form::List,
    }
}

const fn json(name: &'static str, key: &'static str) -> EnvVar {
    EnvVar {
        name,
        key,
        form: Form::Json,
    }
}

/// The server's own settings' variables: listening, database, accounts, the model, the
/// built-in tools, telemetry, security, durable turns and the catalogue's lists. The
/// optional features' are in [`super::env_features`].
const CORE: &[EnvVar] = &[
    var("AGENTCHAT_BIND", "bind"),
    var("AGENTCHAT_PUBLIC_URL", "public_url"),
    var("AGENTCHAT_MAX_BODY_BYTES", "max_body_bytes"),
    var("AGENTCHAT_LISTEN_BACKLOG", "listen_backlog"),
    var(
        "AGENTCHAT_REQUEST_HEAD_TIMEOUT_SECS",
        "request_head_timeout_secs",
    ),
    var("AGENTCHAT_SSE_KEEP_ALIVE_SECS", "sse_keep_alive_secs"),
    var("DATABASE_URL", "database.url"),
    var("AGENTCHAT_DATABASE_POOL_SIZE", "database.pool_size"),
    var(
        "AGENTCHAT_DATABASE_ACQUIRE_TIMEOUT_MS",
        "database.acquire_timeout_ms",
    ),
    var(
        "AGENTCHAT_DATABASE_CREATE_IF_MISSING",
        "database.create_if_missing",
    ),
    var("AGENTCHAT_HOLD_SWEEP_SECS", "database.hold_sweep_secs"),
    var(
        "AGENTCHAT_STATEMENT_TIMEOUT_MS",
        "database.statement_timeout_ms",
    ),
    var("AGENTCHAT_TURN_START_QUEUE", "database.turn_start_queue"),
    var("AGENTCHAT_JWT_SECRET", "auth.jwt_secret"),
    var("AGENTCHAT_SECRET_KEY", "auth.secret_key"),
    var("AGENTCHAT_REGISTRATION", "auth.registration"),
    var(
        "AGENTCHAT_ACCESS_TOKEN_TTL_SECS",
        "auth.access_token_ttl_secs",
    ),
    var(
        "AGENTCHAT_REFRESH_TOKEN_TTL_SECS",
        "auth.refresh_token_ttl_secs",
    ),
    var(
        "AGENTCHAT_MAX_CONCURRENT_HASHES",
        "auth.max_concurrent_hashes",
    ),
    var(
        "AGENTCHAT_ACCOUNT_FAILURE_LIMIT",
        "auth.account_failure_limit",
    ),
    var(
        "AGENTCHAT_ADDRESS_FAILURE_LIMIT",
        "auth.address_failure_limit",
    ),
    var(
        "AGENTCHAT_API_KEY_DEFAULT_DAYS",
        "auth.api_key_default_days",
    ),
    var("AGENTCHAT_API_KEY_MAX_DAYS", "auth.api_key_max_days"),
    var("AGENTCHAT_REAUTH_SECS", "auth.reauth_secs"),
    var("AGENTCHAT_COOKIE_SECURE", "auth.cookie_secure"),
    var("AGENTCHAT_LLM_PROVIDER", "llm.provider"),
    var("AGENTCHAT_LLM_BASE_URL", "llm.base_url"),
    var("AGENTCHAT_LLM_API_KEY", "llm.api_key"),
    var(
        "AGENTCHAT_LLM_BREAKER_COOLDOWN_SECS",
        "llm.breaker_cooldown_secs",
    ),
    var(
        "AGENTCHAT_LLM_BREAKER_FAILURE_RATE_PERCENT",
        "llm.breaker_failure_rate_percent",
    ),
    var("AGENTCHAT_LLM_BREAKER_FAILURES", "llm.breaker_failures"),
    var("AGENTCHAT_LLM_BREAKER_MIN_CALLS", "llm.breaker_min_calls"),
    var("AGENTCHAT_LLM_BREAKER_MIN_USERS", "llm.breaker_min_users"),
    var("AGENTCHAT_LLM_MODEL", "llm.model"),
    list("AGENTCHAT_LLM_MODELS", "llm.models"),
    var("AGENTCHAT_SYSTEM_PROMPT", "llm.system_prompt"),
    var("AGENTCHAT_MAX_ITERATIONS", "llm.max_iterations"),
    var("AGENTCHAT_LLM_MAX_OUTPUT_TOKENS", "llm.max_output_tokens"),
    var(
        "AGENTCHAT_LLM_CONTEXT_WINDOW_TOKENS",
        "llm.context_window_tokens",
    ),
    var(
        "AGENTCHAT_TOOL_OUTPUT_CAP_BYTES",
        "llm.tool_output_cap_bytes",
    ),
    var(
        "AGENTCHAT_MAX_CONVERSATION_MESSAGES",
        "llm.max_conversation_messages",
    ),
    var("AGENTCHAT_LLM_STREAMING", "llm.streaming"),
    var(
        "AGENTCHAT_LLM_CONNECT_TIMEOUT_SECS",
        "llm.connect_timeout_secs",
    ),
    var(
        "AGENTCHAT_LLM_FIRST_BYTE_TIMEOUT_SECS",
        "llm.first_byte_timeout_secs",
    ),
    var("AGENTCHAT_LLM_IDLE_TIMEOUT_SECS", "llm.idle_timeout_secs"),
    var("AGENTCHAT_LLM_TIMEOUT_SECS", "llm.request_timeout_secs"),
    var("AGENTCHAT_TURN_TIMEOUT_SECS", "llm.turn_timeout_secs"),
    var("AGENTCHAT_LLM_MAX_RETRIES", "llm.max_retries"),
    var(
        "AGENTCHAT_LLM_RETRY_BASE_DELAY_MS",
        "llm.retry_base_delay_ms",
    ),
    var("AGENTCHAT_DEMO_DELAY_MS", "llm.demo_delay_ms"),
    var("AGENTCHAT_AUTO_TITLES", "llm.auto_titles"),
    var(
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "llm.capture_content",
    ),
    var("AGENTCHAT_WORKSPACE_DIR", "tools.workspace_dir"),
    var("AGENTCHAT_WORKSPACE_MAX_BYTES", "tools.quota.max_bytes"),
    var("AGENTCHAT_WORKSPACE_MAX_FILES", "tools.quota.max_files"),
    var(
        "AGENTCHAT_WORKSPACE_MAX_FILE_BYTES",
        "tools.quota.max_file_bytes",
    ),
    var("AGENTCHAT_HTTP_TIMEOUT_SECS", "tools.http.timeout_secs"),
    var("AGENTCHAT_HTTP_MAX_BYTES", "tools.http.max_bytes"),
    var("AGENTCHAT_HTTP_MAX_REDIRECTS", "tools.http.max_redirects"),
    var("AGENTCHAT_HTTP_MAX_TEXT_BYTES", "tools.http.max_text_bytes"),
    var("AGENTCHAT_MCP_MAX_LIST_PAGES", "tools.mcp.max_list_pages"),
    var(
        "AGENTCHAT_MCP_MAX_TOOLS_PER_SERVER",
        "tools.mcp.max_tools_per_server",
    ),
    var(
        "AGENTCHAT_MCP_MAX_DESCRIPTION_BYTES",
        "tools.mcp.max_description_bytes",
    ),
    var(
        "AGENTCHAT_MCP_MAX_SCHEMA_BYTES",
        "tools.mcp.max_schema_bytes",
    ),
    var(
        "AGENTCHAT_MCP_MAX_OFFERED_BYTES",
        "tools.mcp.max_offered_bytes",
    ),
    var(
        "AGENTCHAT_MCP_MAX_MESSAGE_BYTES",
        "tools.mcp.max_message_bytes",
    ),
    list(
        "AGENTCHAT_HTTP_ALLOWED_DOMAINS",
        "tools.http.allowed_domains",
    ),
    list(
        "AGENTCHAT_HTTP_ALLOW_PRIVATE_HOST_PORTS",
        "tools.http.allow_private_host_ports",
    ),
    var("AGENTCHAT_LOG_FORMAT", "telemetry.log_format"),
    var("AGENTCHAT_METRICS_TOKEN", "telemetry.metrics_token"),
    var("AGENTCHAT_GRAFANA_URL", "telemetry.grafana_url"),
    var("OTEL_EXPORTER_OTLP_ENDPOINT", "telemetry.otlp_endpoint"),
    var("OTEL_EXPORTER_OTLP_PROTOCOL", "telemetry.otlp_protocol"),
    var("OTEL_SERVICE_NAME", "telemetry.service_name"),
    var("OTEL_BSP_SCHEDULE_DELAY", "telemetry.batch_delay_ms"),
    list("AGENTCHAT_TRUSTED_PROXIES", "security.trusted_proxies"),
    list("AGENTCHAT_ALLOWED_ORIGINS", "security.allowed_origins"),
    var(
        "AGENTCHAT_REFRESH_REUSE_GRACE_SECS",
        "security.refresh_reuse_grace_secs",
    ),
    var(
        "AGENTCHAT_SESSION_MAX_LIFETIME_SECS",
        "security.session_max_lifetime_secs",
    ),
    var(
        "AGENTCHAT_MAX_CONCURRENT_UPLOADS",
        "security.max_concurrent_uploads",
    ),
    var(
        "AGENTCHAT_MAX_CONCURRENT_UPLOADS_PER_USER",
        "security.max_concurrent_uploads_per_user",
    ),
    var(
        "AGENTCHAT_MAX_CONCURRENT_SEARCHES",
        "security.max_concurrent_searches",
    ),
    var(
        "AGENTCHAT_UPLOAD_DEADLINE_SECS",
        "security.upload_deadline_secs",
    ),
    var(
        "AGENTCHAT_UPLOAD_MIN_BYTES_PER_SEC",
        "security.upload_min_bytes_per_sec",
    ),
    var(
        "AGENTCHAT_REPLICA_TIMEOUT_SECS",
        "durable.replica_timeout_secs",
    ),
    var(
        "AGENTCHAT_SHUTDOWN_GRACE_SECS",
        "durable.shutdown_grace_secs",
    ),
    var("AGENTCHAT_APPROVAL_TTL_SECS", "durable.approval_ttl_secs"),
    json("AGENTCHAT_MCP_SERVERS", "mcp_servers"),
    json("AGENTCHAT_PROVIDERS", "providers"),
    json("AGENTCHAT_MODELS", "models"),
    json("AGENTCHAT_EMBEDDING_MODELS", "embedding_models"),
    json("AGENTCHAT_SEARCH_PROVIDERS", "search_providers"),
];

/// Every setting's environment variable.
pub fn all() -> impl Iterator<Item = &'static EnvVar> {
    CORE.iter().chain(super::env_features::FEATURES)
}

/// `AGENTCHAT_` variables that are not settings but are read elsewhere.
pub const OTHER_VARS: &[&str] = &["AGENTCHAT_CONFIG", "AGENTCHAT_ADMIN_PASSWORD"];

/// The variable that sets `key`, if any.
pub fn var_for(key: &str) -> Option<&'static EnvVar> {
    all().find(|v| v.key == key)
}

/// The settings the environment sets, as a tree of strings keyed like the TOML file.
/// Empty values count as unset.
pub fn layer(env: &impl Fn(&str) -> Option<String>) -> Result<Value, super::ConfigError> {
    let mut root = Map::new();
    for v in all() {
        let Some(raw) = env(v.name).filter(|s| !s.trim().is_empty()) else {
            continue;
        };
        let value = match v.form {
            Form::Text => Value::String(raw),
            Form::List => Value::Array(
                raw.split(',')
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(s.to_owned()))
                    .collect(),
            ),
            Form::Json => serde_json::from_str(&raw)
                .map_err(|e| super::ConfigError::invalid(v.key, format!("not valid JSON: {e}")))?,
        };
        insert(&mut root, v.key, value);
    }
    Ok(Value::Object(root))
}

fn insert(root: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            root.insert(key.to_owned(), value);
        }
        Some((head, rest)) => {
            let child = root
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = child {
                insert(map, rest, value);
            }
        }
    }
}

/// `AGENTCHAT_` variables in `names` that nothing reads (typos), each with the closest
/// known name.
pub fn unknown(names: impl Iterator<Item = String>) -> Vec<(String, Option<&'static str>)> {
    let known: Vec<&'static str> = all()
        .map(|v| v.name)
        .chain(OTHER_VARS.iter().copied())
        .collect();
    names
        .filter(|n| n.starts_with("AGENTCHAT_") && !known.contains(&n.as_str()))
        .map(|n| {
            let near = super::suggest::closest(&n, known.iter().copied());
            (n, near)
        })
        .collect()
}
