//! Schemas of the answers that handlers build with `json!` rather than a struct of their own.
//! They describe the wire format only; Schemathesis checks them against the running server
//! (`tests/schemathesis/run.sh`), so a handler that changes its answer fails CI.

#![allow(dead_code)]

use chrono::{DateTime, Utc};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::budget::Period;
use crate::db::models::{audit, budget, conversation, message, role, usage, user};
use crate::error::ErrorDetail;
use crate::files::FileEntry;
use crate::turn::{FinishReason, TurnEvent};

/// `GET /healthz`.
#[derive(ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// `GET /readyz`.
#[derive(ToSchema)]
pub struct Readiness {
    /// `ready` or `unavailable`.
    pub status: String,
    /// `ok` or `unreachable`.
    pub database: String,
    /// How many model providers' circuit breakers are `closed`, `open` and `half_open`.
    pub breakers: std::collections::HashMap<String, u64>,
    /// Each provider's breaker state by provider name: only for an admin's bearer token.
    pub providers:
        Option<std::collections::HashMap<String, crate::catalogue::breaker::BreakerState>>,
    /// The code interpreter's isolation here: only for an admin's bearer token.
    pub sandbox: Option<SandboxIsolation>,
    /// Present when not ready.
    pub error: Option<ErrorDetail<'static>>,
}

/// A new account.
#[derive(ToSchema)]
pub struct Registered {
    pub id: Uuid,
    pub username: String,
    pub role: String,
}

/// `GET /api/me`.
#[derive(ToSchema)]
pub struct Me {
    pub id: Uuid,
    pub username: String,
    pub role: String,
    /// The tools the caller's role may use.
    pub tools: Vec<String>,
    pub budget: budget::Status,
    pub preferences: crate::db::models::preferences::Preferences,
}

/// A page of conversations, most recently active first.
#[derive(ToSchema)]
pub struct ConversationPage {
    pub items: Vec<conversation::Conversation>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}

/// A conversation with all its messages, oldest first.
#[derive(ToSchema)]
pub struct ConversationDetail {
    pub id: Uuid,
    pub title: String,
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The conversation's own instructions, sent after the server's system prompt.
    pub system_prompt: Option<String>,
    /// The title is still the default; a generated one replaces it after an answer.
    pub title_auto: bool,
    /// The assistant the conversation was started with.
    pub assistant_id: Option<Uuid>,
    /// `{id, name, retired}` of that assistant.
    #[schema(value_type = Option<Object>)]
    pub assistant: Option<serde_json::Value>,
    /// Whether the user's memory notes go into this conversation's prompts.
    pub memory_enabled: bool,
    /// The latest messages (at most `limit`), oldest first.
    pub messages: Vec<message::Message>,
    /// Older messages exist: ask for them with `?before=` this cursor.
    pub messages_before: Option<String>,
}

/// One server-sent event as it travels: `data` is the payload as JSON text (for a turn's
/// streams a [`TurnEvent`], named by `event`, placed by `id`; for `/v1` streaming a
/// `chat.completion.chunk`, and `[DONE]` last).
#[derive(ToSchema)]
pub struct SseEvent {
    /// The event's type (`turn_start`, `text_delta`, ...); absent on `/v1` streams.
    #[schema(required = false, nullable = false)]
    pub event: Option<String>,
    /// The event's place in its stream: send the last one back as `Last-Event-ID`.
    #[schema(required = false, nullable = false)]
    pub id: Option<String>,
    /// The payload, JSON text (`[DONE]` ends a `/v1` stream).
    pub data: String,
}

/// `POST /api/conversations/{id}/truncate`.
#[derive(ToSchema)]
pub struct Truncated {
    /// How many messages were removed (the named one and everything after it).
    pub removed: u64,
}

/// `POST /api/conversations/{id}/cancel`.
#[derive(ToSchema)]
pub struct CancelOutcome {
    /// Whether a turn running in this process was told to stop.
    pub cancelled: bool,
    /// When nothing was cancelled here: whether a turn runs in another server process.
    #[schema(required = false, nullable = false)]
    pub running: Option<bool>,
}

/// Tokens of a whole turn.
#[derive(ToSchema)]
pub struct TurnTokens {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A finished turn as one document (`Accept: application/json`).
#[derive(ToSchema)]
pub struct TurnSummary {
    pub message_id: Option<Uuid>,
    pub finish_reason: Option<FinishReason>,
    /// The final answer's text.
    pub content: String,
    pub usage: TurnTokens,
    pub error: Option<ErrorDetail<'static>>,
    /// Every event, as the stream would have sent them.
    pub events: Vec<TurnEvent>,
}

/// A workspace's use of its quota.
#[derive(ToSchema)]
pub struct WorkspaceUsage {
    pub bytes: u64,
    pub files: u64,
    pub max_bytes: u64,
    pub max_files: u64,
    pub max_file_bytes: u64,
}

/// `GET /api/files`.
#[derive(ToSchema)]
pub struct FileListing {
    pub items: Vec<FileEntry>,
    pub usage: WorkspaceUsage,
}

/// `GET /api/admin/users`.
#[derive(ToSchema)]
pub struct UserList {
    pub items: Vec<user::UserView>,
}

/// `GET /api/admin/roles`.
#[derive(ToSchema)]
pub struct RoleList {
    pub items: Vec<role::Role>,
}

/// A tool the agent can call.
#[derive(ToSchema)]
pub struct ToolItem {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
    /// `builtin` or `custom`.
    pub kind: String,
}

/// `GET /api/admin/tools`.
#[derive(ToSchema)]
pub struct ToolList {
    pub items: Vec<ToolItem>,
    /// The code interpreter's isolation on the replica that answered.
    pub sandbox: SandboxIsolation,
}

/// How well the code interpreter isolates on a replica.
#[derive(ToSchema)]
pub struct SandboxIsolation {
    /// `ok` (namespaces, seccomp, rlimits and a per-run cgroup), `rlimits_only` (no
    /// delegated cgroup) or `unavailable` (the tool refuses).
    pub level: String,
    /// Why, when `unavailable`.
    pub reason: Option<String>,
}

/// An admin-defined HTTP tool; header values are write-only, so only their names show.
#[derive(ToSchema)]
pub struct CustomTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub method: String,
    pub url_template: String,
    /// Names of the headers sent (their values are never shown).
    pub headers: Vec<String>,
    pub timeout_ms: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `GET /api/admin/tools/custom`.
#[derive(ToSchema)]
pub struct CustomToolList {
    pub items: Vec<CustomTool>,
}

/// An MCP server as the admin API shows it (never header or environment values).
#[derive(ToSchema)]
pub struct McpServer {
    /// `^[a-z0-9-]{1,24}$`; its tools are named `{name}__{tool}`.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `config` (the config file; read-only here) or `api`.
    pub source: String,
    pub enabled: bool,
    pub timeout_ms: u64,
    pub forward_identity: bool,
    /// `{state: connected | error | disabled | connecting, error?, checked_at, protocol?}`.
    pub status: Value,
    /// `[{name, remote_name, description, annotations}]`.
    pub tools: Vec<Value>,
}

/// `GET /api/admin/mcp-servers`.
#[derive(ToSchema)]
pub struct McpServerList {
    pub items: Vec<McpServer>,
    pub next_cursor: Option<String>,
}

/// `POST|PUT /api/admin/mcp-servers`: Streamable HTTP servers only (stdio ones come from the
/// config file). Header values are write-only; absent on PUT keeps the stored ones.
#[derive(ToSchema)]
pub struct McpServerBody {
    pub name: Option<String>,
    pub url: String,
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
    pub forward_identity: Option<bool>,
}

/// `GET /.well-known/jwks.json`: the public keys of the identity tokens sent to MCP servers.
#[derive(ToSchema)]
pub struct Jwks {
    /// JSON Web Keys (`kty`, `crv`, `x`, `kid`, `alg`, `use`).
    pub keys: Vec<Value>,
}

/// `GET /api/admin/audit`, newest first.
#[derive(ToSchema)]
pub struct AuditPage {
    pub items: Vec<audit::AuditRow>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<i64>,
}

/// Tokens of one model over the period.
#[derive(ToSchema)]
pub struct ModelUsage {
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The calls this model answered as another's fallback.
    pub fallback_calls: i64,
}

/// `GET /api/admin/usage`.
#[derive(ToSchema)]
pub struct UsageReport {
    pub period: Period,
    pub from: DateTime<Utc>,
    /// When the period ends (null for `total`).
    pub to: Option<DateTime<Utc>>,
    pub by_user: Vec<usage::UserModelUsage>,
    pub by_model: Vec<ModelUsage>,
    /// The usage line of each assistant (its chats and `/v1` calls).
    pub by_assistant: Vec<usage::AssistantUsage>,
    /// The calls a fallback answered: per model, the one it stood in for and why.
    pub fallbacks: Vec<crate::db::models::message_fallback::FallbackUsage>,
    pub tools: Vec<audit::ToolTally>,
    pub grafana_url: Option<String>,
}

/// A page of approvals, newest first.
#[derive(ToSchema)]
pub struct ApprovalPage {
    pub items: Vec<crate::turn::Approval>,
    /// Pass as `cursor` for the next page (a timestamp); null on the last one.
    pub next_cursor: Option<chrono::DateTime<chrono::Utc>>,
}

/// A recorded decision.
#[derive(ToSchema)]
pub struct DecisionResult {
    pub approval: crate::turn::Approval,
    /// The step's last decision is in and its turn went on (in the background).
    pub resumed: bool,
}
