//! Provider-neutral LLM interface.
//!
//! The rest of the server talks to language models only through the types in this
//! module: a [`ChatRequest`] goes in, a stream of [`StreamEvent`]s comes out. The
//! adapters ([`openai`], [`anthropic`], [`demo`]) translate to and from the wire
//! formats; [`http`] holds the shared HTTP plumbing (client building, retries with
//! backoff, timeouts and SSE decoding). The catalogue of models they serve is its own room
//! ([`crate::catalogue`]).

pub mod anthropic;
pub mod attachment_note;
pub mod demo;
mod demo_analyse;
mod demo_arithmetic;
mod demo_attachments;
pub mod demo_embed;
mod demo_image;
mod demo_phrasing;
mod demo_web;
pub mod embeddings;
mod error;
pub mod http;
pub mod image_part;
pub mod openai;
mod provider;
pub mod title;
mod usage;
mod user_text;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use error::LlmError;
pub use http::HttpSettings;
pub use image_part::ImagePart;
pub use provider::{from_entry, from_settings};
pub use usage::Usage;

/// Who authored a message in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model (system prompt).
    System,
    /// A human participant.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call, answering an assistant's [`ToolCall`].
    Tool,
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned identifier, echoed back in the matching tool result.
    pub id: String,
    /// Name of the tool to call.
    pub name: String,
    /// Raw JSON text of the arguments, exactly as the model produced it
    /// (it may be invalid JSON; callers must validate).
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author of the message.
    pub role: Role,
    /// Text content (may be empty, e.g. for an assistant message that only calls tools).
    pub content: String,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`] messages: the id of the [`ToolCall`] this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images the message carries (a user's attachments; a tool's result files), sent as
    /// the provider's native image parts to a model that reads images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    /// An assistant text message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }

    /// An assistant message carrying tool calls (and optional text).
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            images: Vec::new(),
        }
    }

    /// A tool result answering the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
            images: Vec::new(),
        }
    }

    fn plain(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }

    /// The message carrying `images` too.
    pub fn with_images(mut self, images: Vec<ImagePart>) -> Self {
        self.images = images;
        self
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name (what the model uses to call it).
    pub name: String,
    /// Human/model readable description.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// How the model may use the offered tools.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call the named tool.
    Named(String),
}

/// A provider-neutral chat completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model identifier as the provider knows it.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Tools offered to the model (may be empty).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// How tools may be used (ignored when `tools` is empty).
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Maximum number of output tokens.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
}

impl ChatRequest {
    /// A request with the given model and messages, no tools and default options.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
            temperature: None,
        }
    }
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the message (or a stop sequence).
    Stop,
    /// The model wants tool calls executed.
    ToolCalls,
    /// The token limit was reached.
    Length,
    /// The provider filtered or refused the content.
    ContentFilter,
    /// Anything else, with the provider's raw value.
    Other(String),
}

impl FinishReason {
    /// The OpenTelemetry-style string for this reason
    /// (`stop`, `tool_calls`, `length`, `content_filter`, or the raw value).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// One event of a streamed model response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A tool call began streaming (for UIs); its arguments are still incomplete.
    ToolCallStart {
        /// Position of the tool call within this message (0-based).
        index: usize,
        /// Provider-assigned id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// The model's message is complete: emitted exactly once, last. `tool_calls`
    /// are fully assembled, in index order.
    Completed {
        /// Why generation stopped.
        finish_reason: FinishReason,
        /// Fully assembled tool calls, in index order.
        tool_calls: Vec<ToolCall>,
        /// Token usage, when the provider reported it.
        usage: Option<Usage>,
        /// The model that actually answered, when reported.
        response_model: Option<String>,
    },
}

/// The stream returned by [`LlmProvider::stream_chat`].
pub type EventStream = futures_util::stream::BoxStream<'static, Result<StreamEvent, LlmError>>;

/// A chat model backend.
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// `"openai"`, `"anthropic"` or `"demo"` (OTel `gen_ai.provider.name`).
    fn provider_name(&self) -> &'static str;

    /// Host of the base URL (OTel `server.address`), if any.
    fn server_address(&self) -> Option<String>;

    /// Sends the request (retrying 429/5xx/connect errors with backoff honouring
    /// `Retry-After`, only before any event is yielded) and returns the event stream.
    ///
    /// The stream yields at most one [`StreamEvent::Completed`], always last; a
    /// stream that ends before the provider signalled completion yields
    /// [`LlmError::StreamEndedEarly`] instead.
    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError>;
}

pub use crate::domain::tokens::{
    estimate_tokens, estimate_tokens_of_chars, MESSAGE_OVERHEAD_TOKENS,
};

/// Truncates `s` to at most `max` characters (on a char boundary), adding `…` when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &s[..idx]),
        None => s.to_string(),
    }
}

/// Host part of a base URL, for [`LlmProvider::server_address`].
pub(crate) fn host_of(base_url: &str) -> Option<String> {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_cut_to_what_the_request_could_produce() {
        let absurd = Usage {
            input_tokens: 1_000_000_000_000_000_000,
            output_tokens: u64::MAX,
            cache_read_tokens: u64::MAX,
            cache_write_tokens: u64::MAX,
        };
        let (u, cut) = absurd.within(8_000, 100);
        assert!(cut);
        assert_eq!(
            u,
            Usage {
                input_tokens: 8_000,
                output_tokens: 100,
                cache_read_tokens: 8_000,
                cache_write_tokens: 0,
            }
        );
        let honest = Usage {
            input_tokens: 500,
            output_tokens: 20,
            cache_read_tokens: 100,
            cache_write_tokens: 50,
        };
        assert_eq!(honest.within(8_000, 100), (honest, false));
    }

    #[test]
    fn estimate_tokens_rounds_up_with_min_one() {
        assert_eq!(estimate_tokens(""), 1);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("ééééé"), 2);
    }

    #[test]
    fn truncation_and_codes() {
        assert_eq!(truncate_chars("hello", 10), "hello");
        assert_eq!(truncate_chars("hello", 2), "he…");
        assert_eq!(LlmError::StreamEndedEarly.code(), "upstream_incomplete");
        assert!(LlmError::Upstream {
            status: 503,
            message: String::new()
        }
        .is_retryable());
        assert!(!LlmError::Upstream {
            status: 400,
            message: String::new()
        }
        .is_retryable());
        assert_eq!(
            host_of("http://127.0.0.1:8080/v1").as_deref(),
            Some("127.0.0.1")
        );
    }
}
