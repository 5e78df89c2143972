//! The Anthropic Messages API wire format as typed structs: the request the adapter sends,
//! the message and the stream events it reads. Fields servers may leave out are optional;
//! a field of the wrong type is an error, never a silent `None`. Block and event types this
//! adapter does not use (thinking, citations, pings, future ones) are read as `Other`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/messages` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessagesRequest {
    pub model: String,
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// `system`: a string, or text blocks (which may carry a cache breakpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum System {
    Text(String),
    Blocks(Vec<SystemBlock>),
}

impl System {
    /// The instructions as one text.
    pub fn text(&self) -> String {
        match self {
            System::Text(t) => t.clone(),
            System::Blocks(b) => b
                .iter()
                .map(|b| b.text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
        }
    }
}

/// A text block of `system`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A prompt-cache breakpoint: the prefix up to and including this block is cached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
}

impl CacheControl {
    /// The 5-minute cache, the only kind every model supports.
    pub fn ephemeral() -> Self {
        Self {
            kind: "ephemeral".to_owned(),
        }
    }
}

/// One turn: `user` or `assistant`, with its blocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Vec<Block>,
}

/// A content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    /// An image, base64 in the request.
    Image { source: ImageSource },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Thinking, citations and block types to come.
    #[serde(other)]
    Other,
}

/// `{"type": "base64", "media_type": ..., "data": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageSource {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: String,
    pub data: String,
}

/// A tool result's content: text, or blocks (text and images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<Block>),
}

impl Block {
    /// An image block of `image`.
    pub fn image(image: &crate::llm::ImagePart) -> Self {
        Block::Image {
            source: ImageSource {
                kind: "base64".into(),
                media_type: image.media_type.clone(),
                data: image.data.clone(),
            },
        }
    }

    /// Anthropic wants tool results before any text in a user turn.
    pub fn is_tool_result(&self) -> bool {
        matches!(self, Block::ToolResult { .. })
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    None,
    Any,
    Tool { name: String },
}

/// Token counts; input is split across the cache fields.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// Input tokens including prompt-cache reads and writes.
    pub fn total_input(&self) -> Option<u64> {
        let cache = self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0);
        self.input_tokens.map(|base| base + cache)
    }
}

/// A whole (non-streamed) answer, or an error object.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessageResponse {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub content: Option<Vec<Block>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub error: Option<ErrorObject>,
}

/// `{"type": "error", "error": {type, message}}`'s inner object.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorObject {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

/// One event of a streamed answer (the `type` of its data).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        #[serde(default)]
        index: u64,
        content_block: Block,
    },
    ContentBlockDelta {
        #[serde(default)]
        index: u64,
        delta: Delta,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: ErrorObject,
    },
    /// `ping`, `content_block_stop` and event types to come.
    #[serde(other)]
    Other,
}

/// `message_start.message`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessageStart {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// `content_block_delta.delta`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

/// `message_delta.delta`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessageDelta {
    #[serde(default)]
    pub stop_reason: Option<String>,
}
