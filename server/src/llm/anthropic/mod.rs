//! Anthropic Messages API adapter. The wire format is typed in [`wire`]; [`stream`] reads
//! answers back.

mod stream;
pub mod wire;

use async_trait::async_trait;

use super::http::{HttpSettings, Upstream};
use super::{ChatRequest, EventStream, LlmError, LlmProvider, Role, ToolChoice};
pub use stream::MessageDecoder;

/// The `anthropic-version` header value sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` used when the request does not set one (Anthropic requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Talks to `POST {base_url}/v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    upstream: Upstream,
}

impl AnthropicProvider {
    /// Creates the provider. `base_url` is like `https://api.anthropic.com`
    /// (a trailing slash is ignored); `api_key` is sent as `x-api-key` when set.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        settings: HttpSettings,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            upstream: Upstream::new(base_url, api_key, settings)?,
        })
    }

    /// The normalized base URL.
    pub fn base_url(&self) -> &str {
        self.upstream.base_url()
    }

    /// The body sent for `req` (exposed for tests and debugging).
    pub fn request_body(&self, req: &ChatRequest) -> wire::MessagesRequest {
        build_body(req, self.upstream.streaming())
    }
}

#[async_trait]
impl LlmProvider for AnthropicProvider {
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    fn server_address(&self) -> Option<String> {
        self.upstream.host().map(str::to_owned)
    }

    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let body = self.request_body(&req);
        let prepare = |rb: reqwest::RequestBuilder, key: Option<&str>| {
            let rb = rb.header("anthropic-version", ANTHROPIC_VERSION);
            match key {
                Some(key) => rb.header("x-api-key", key),
                None => rb,
            }
        };
        self.upstream
            .call(
                "/v1/messages",
                &body,
                prepare,
                stream::parse_message,
                MessageDecoder::default(),
            )
            .await
    }
}

/// Builds the Messages API request body: system messages joined into `system`, consecutive
/// messages of one role merged (tool results are the user's), tool results first in a turn.
fn build_body(req: &ChatRequest, streaming: bool) -> wire::MessagesRequest {
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let mut turns: Vec<wire::Message> = Vec::new();
    for m in &req.messages {
        let (role, blocks): (&str, Vec<wire::Block>) = match m.role {
            Role::System => continue,
            Role::User => {
                // Images first: Anthropic reads a question best after what it is about.
                let mut blocks: Vec<wire::Block> =
                    m.images.iter().map(wire::Block::image).collect();
                blocks.extend(text_block(&m.content));
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks: Vec<wire::Block> = text_block(&m.content).into_iter().collect();
                blocks.extend(m.tool_calls.iter().map(|c| wire::Block::ToolUse {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    input: Some(
                        match serde_json::from_str::<serde_json::Value>(&c.arguments) {
                            Ok(v @ serde_json::Value::Object(_)) => v,
                            _ => serde_json::json!({}),
                        },
                    ),
                }));
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![wire::Block::ToolResult {
                    tool_use_id: m.tool_call_id.clone().unwrap_or_default(),
                    content: if m.images.is_empty() {
                        wire::ToolResultContent::Text(m.content.clone())
                    } else {
                        let mut blocks: Vec<wire::Block> =
                            text_block(&m.content).into_iter().collect();
                        blocks.extend(m.images.iter().map(wire::Block::image));
                        wire::ToolResultContent::Blocks(blocks)
                    },
                    cache_control: None,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(wire::Message {
                role: role.to_owned(),
                content: blocks,
            }),
        }
    }
    for turn in &mut turns {
        turn.content.sort_by_key(|b| !b.is_tool_result());
    }
    let mut tools: Option<Vec<wire::Tool>> = (!req.tools.is_empty()).then(|| {
        req.tools
            .iter()
            .map(|t| wire::Tool {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.parameters.clone(),
                cache_control: None,
            })
            .collect()
    });
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let system = place_cache_breakpoints(system, tools.as_deref_mut(), &mut turns);
    let tool_choice = tools.as_ref().map(|_| match &req.tool_choice {
        ToolChoice::Auto => wire::ToolChoice::Auto,
        ToolChoice::None => wire::ToolChoice::None,
        ToolChoice::Required => wire::ToolChoice::Any,
        ToolChoice::Named(name) => wire::ToolChoice::Tool { name: name.clone() },
    });
    wire::MessagesRequest {
        model: req.model.clone(),
        max_tokens: req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system,
        messages: turns,
        tools,
        tool_choice,
        temperature: req.temperature,
        stream: streaming.then_some(true),
    }
}

/// Marks what a turn re-sends on every model call as cacheable: tools and system prompt
/// (Anthropic caches in the order tools, system, messages, so the system prompt's breakpoint
/// covers the tool specs; without a system prompt the last tool carries it), and the last
/// tool result, so that the next step of a tool loop reads the history from the cache.
/// Three breakpoints of the four allowed.
fn place_cache_breakpoints(
    system: Option<String>,
    tools: Option<&mut [wire::Tool]>,
    turns: &mut [wire::Message],
) -> Option<wire::System> {
    if let Some(wire::Block::ToolResult { cache_control, .. }) = turns
        .iter_mut()
        .flat_map(|t| t.content.iter_mut())
        .rev()
        .find(|b| b.is_tool_result())
    {
        *cache_control = Some(wire::CacheControl::ephemeral());
    }
    match system {
        Some(text) => Some(wire::System::Blocks(vec![wire::SystemBlock {
            kind: "text".to_owned(),
            text,
            cache_control: Some(wire::CacheControl::ephemeral()),
        }])),
        None => {
            if let Some(last) = tools.and_then(|t| t.last_mut()) {
                last.cache_control = Some(wire::CacheControl::ephemeral());
            }
            None
        }
    }
}

fn text_block(text: &str) -> Option<wire::Block> {
    (!text.is_empty()).then(|| wire::Block::Text {
        text: text.to_owned(),
    })
}

#[cfg(test)]
mod tests;
