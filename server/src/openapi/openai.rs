//! Schemas of the OpenAI-compatible `/v1` API and of the API keys, for the description.
//! The `/v1` bodies are OpenAI's; only what this server reads or writes is named.

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

/// `POST /v1/chat/completions` (other OpenAI parameters are accepted and ignored).
#[derive(ToSchema)]
pub struct OpenAiChatRequest {
    /// One of `GET /v1/models`.
    pub model: String,
    /// 1 to 256 messages: `system` | `developer` | `user` | `assistant` | `tool`.
    pub messages: Vec<Value>,
    /// Stream `chat.completion.chunk` events.
    pub stream: Option<bool>,
    /// `{"include_usage": true}` adds a last chunk with `usage`.
    pub stream_options: Option<Value>,
    /// The client's function tools: offered to the model, returned as `tool_calls`.
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    /// Only 1.
    pub n: Option<u32>,
    /// Accepted and ignored: the server's own output caps apply.
    pub max_tokens: Option<u32>,
    /// Accepted and ignored, as `max_tokens`.
    pub max_completion_tokens: Option<u32>,
    /// Accepted and ignored (an assistant's own temperature applies).
    pub temperature: Option<f32>,
}

/// A `chat.completion`, with the optional `agentchat` extension.
#[derive(ToSchema)]
pub struct OpenAiCompletion {
    pub id: String,
    /// `chat.completion`.
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<Value>,
    pub usage: Value,
    /// `{conversation_id, finish_reason, events}`: the stored conversation, the agent's own
    /// finish reason and the server-side tool calls and results.
    pub agentchat: Option<Value>,
}

/// One `data:` of the stream: a `chat.completion.chunk` (or an error object), then `[DONE]`.
#[derive(ToSchema)]
pub struct OpenAiChunk {
    pub id: String,
    /// `chat.completion.chunk`.
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<Value>,
    pub usage: Option<Value>,
    /// Server-side activity: `{conversation_id}`, a `tool_call` / `tool_result` / `done` turn event.
    pub agentchat: Option<Value>,
}

/// `GET /v1/models`.
#[derive(ToSchema)]
pub struct OpenAiModels {
    /// `list`.
    pub object: String,
    pub data: Vec<OpenAiModel>,
}

/// One model.
#[derive(ToSchema)]
pub struct OpenAiModel {
    pub id: String,
    /// `model`.
    pub object: String,
    pub created: i64,
    pub owned_by: String,
    /// What the model reads: `["text"]` or `["text", "image"]`.
    pub input: Vec<crate::config::InputKind>,
    /// Largest image one request may give it, in bytes.
    pub max_image_bytes: u64,
    /// Most images one request may give it.
    pub max_images: u32,
}

/// OpenAI's error body.
#[derive(ToSchema)]
pub struct OpenAiErrorBody {
    pub error: OpenAiErrorDetail,
}

/// OpenAI's error object.
#[derive(ToSchema)]
pub struct OpenAiErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `permission_error`, `insufficient_quota`, `rate_limit_error`, `server_error`.
    #[schema(rename = "type")]
    pub kind: String,
    pub param: Option<String>,
    pub code: Option<String>,
}
