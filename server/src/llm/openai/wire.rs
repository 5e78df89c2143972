//! The OpenAI Chat Completions wire format as typed structs: what the upstream adapter sends
//! and reads, and what the server's own `/v1/chat/completions` reads and answers. Reading is
//! lenient where compatible servers differ (missing ids, arguments sent as objects, absent
//! fields); a field of the wrong type is an error, never a silent `None`.

use crate::config::InputKind;
use serde::{Deserialize, Deserializer, Serialize};

/// `POST /chat/completions` body. Parameters this server has no use for are accepted and
/// ignored, as OpenAI-compatible servers commonly do.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<RequestMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    /// OpenAI's newer name for system instructions.
    Developer,
    User,
    Assistant,
    Tool,
    /// The deprecated function-calling role (read only to refuse it clearly).
    Function,
}

/// One message of a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestMessage {
    pub role: MessageRole,
    /// Text, or parts of which only text ones are understood; `null` for an assistant
    /// message that only calls tools.
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// Message content: a string or an array of parts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One part of a message's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// An image: a `data:` URL (or, from a client, a link this server refuses to fetch).
    ImageUrl {
        image_url: ImageUrl,
    },
    /// Audio, files: not understood here.
    #[serde(other)]
    Unsupported,
}

/// `image_url` of an image part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageUrl {
    pub url: String,
    /// `auto`, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDef,
}

/// A function tool's definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
}

/// `tool_choice`: a mode (`auto`, `none`, `required`) or a named function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(String),
    Named(NamedToolChoice),
}

/// `{"type": "function", "function": {"name": ..}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedToolChoice {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionName,
}

/// A function's name alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionName {
    pub name: String,
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    /// Some compatible servers leave it out; the adapter names such calls by position.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".to_owned()
}

/// The function a call names and its arguments (JSON text).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default, deserialize_with = "json_text")]
    pub arguments: String,
}

/// Arguments are JSON text; some servers send the object itself, or `null`.
fn json_text<'de, D: Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(de)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    /// Of `prompt_tokens`, how many the prompt cache served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Some compatible servers send `null`: none cached.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub cached_tokens: u64,
}

fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(0))
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: None,
        }
    }
}

/// A whole (non-streamed) answer: `chat.completion`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatCompletion {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub created: i64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// An error reported with a success status (some compatible servers do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorField>,
}

/// One choice of a `chat.completion`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: u32,
    pub message: ResponseMessage,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The model's message in a `chat.completion`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResponseMessage {
    #[serde(default = "assistant_role")]
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    pub refusal: Option<String>,
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

/// One streamed piece: `chat.completion.chunk`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub created: i64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Only on the last chunk, when `stream_options.include_usage` asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// An error in the middle of a stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorField>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    /// Serialized as `null` until the last chunk of the choice, as OpenAI does.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A piece of a streamed tool call, assembled by `index`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
}

/// The function part of a tool-call delta.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// `{"error": {...}}`: OpenAI's error body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

/// An error field as servers send it: OpenAI's object, or a bare string.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ErrorField {
    Object(ErrorObject),
    Text(String),
}

impl ErrorField {
    pub fn message(&self) -> &str {
        match self {
            ErrorField::Object(o) => &o.message,
            ErrorField::Text(s) => s,
        }
    }

    /// A numeric code that is an HTTP status, as some servers report in-band.
    pub fn status(&self) -> Option<u16> {
        match self {
            ErrorField::Object(ErrorObject {
                code: Some(ErrorCode::Number(n)),
                ..
            }) => u16::try_from(*n).ok().filter(|c| (400..600).contains(c)),
            _ => None,
        }
    }
}

/// OpenAI's error object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub param: Option<String>,
    #[serde(default)]
    pub code: Option<ErrorCode>,
}

/// An error code: OpenAI sends strings; some servers send numbers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ErrorCode {
    Number(u64),
    Text(String),
}

/// `GET /models` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelList {
    pub object: String,
    pub data: Vec<Model>,
}

/// One model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub owned_by: String,
    /// What the model reads (`text`, `image`): a client learns whether to send images.
    #[serde(default)]
    pub input: Vec<InputKind>,
    #[serde(default)]
    pub max_image_bytes: u64,
    #[serde(default)]
    pub max_images: u32,
}

impl Model {
    /// The `/v1/models` entry `id`, reading `input` within the image limits given.
    pub fn new(id: String, input: Vec<InputKind>, max_image_bytes: u64, max_images: u32) -> Self {
        Self {
            id,
            object: "model".into(),
            created: 0,
            owned_by: "agentchat".into(),
            input,
            max_image_bytes,
            max_images,
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
