//! OpenAI Chat Completions adapter (also fits OpenAI-compatible servers such as
//! vLLM, Ollama, llama.cpp or LiteLLM). The wire format is typed in [`wire`], shared with
//! the server's own OpenAI-compatible endpoint; [`stream`] reads answers back.

mod stream;
pub mod wire;

use async_trait::async_trait;

use super::http::{HttpSettings, Upstream};
use super::{ChatMessage, ChatRequest, EventStream, LlmError, LlmProvider, Role};
pub use stream::ChunkDecoder;

/// Talks to `POST {base_url}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    upstream: Upstream,
}

impl OpenAiProvider {
    /// Creates the provider. `base_url` is like `https://api.openai.com/v1`
    /// (a trailing slash is ignored); `api_key` is sent as a bearer token when set.
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
    pub fn request_body(&self, req: &ChatRequest) -> wire::ChatCompletionRequest {
        // api.openai.com rejects `max_tokens` for reasoning models; compatible
        // servers often only know `max_tokens`.
        let official = self.upstream.host().is_some_and(|h| h == "api.openai.com");
        build_body(req, self.upstream.streaming(), official)
    }
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    fn server_address(&self) -> Option<String> {
        self.upstream.host().map(str::to_owned)
    }

    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let body = self.request_body(&req);
        let prepare = |rb: reqwest::RequestBuilder, key: Option<&str>| match key {
            Some(key) => rb.bearer_auth(key),
            None => rb,
        };
        self.upstream
            .call(
                "/chat/completions",
                &body,
                prepare,
                stream::parse_completion,
                ChunkDecoder::default(),
            )
            .await
    }
}

/// Builds the Chat Completions request body; `official` (api.openai.com) names the output
/// cap `max_completion_tokens`.
fn build_body(req: &ChatRequest, streaming: bool, official: bool) -> wire::ChatCompletionRequest {
    let tools = (!req.tools.is_empty()).then(|| {
        req.tools
            .iter()
            .map(|t| wire::Tool {
                kind: "function".into(),
                function: wire::FunctionDef {
                    name: t.name.clone(),
                    description: Some(t.description.clone()),
                    parameters: Some(t.parameters.clone()),
                },
            })
            .collect()
    });
    let tool_choice = tools.as_ref().map(|_| match &req.tool_choice {
        super::ToolChoice::Auto => wire::ToolChoice::Mode("auto".into()),
        super::ToolChoice::None => wire::ToolChoice::Mode("none".into()),
        super::ToolChoice::Required => wire::ToolChoice::Mode("required".into()),
        super::ToolChoice::Named(name) => wire::ToolChoice::Named(wire::NamedToolChoice {
            kind: "function".into(),
            function: wire::FunctionName { name: name.clone() },
        }),
    });
    let (max_tokens, max_completion_tokens) = if official {
        (None, req.max_tokens)
    } else {
        (req.max_tokens, None)
    };
    wire::ChatCompletionRequest {
        model: req.model.clone(),
        messages: messages(&req.messages),
        tools,
        tool_choice,
        max_tokens,
        max_completion_tokens,
        temperature: req.temperature,
        n: None,
        stream: Some(streaming),
        stream_options: streaming.then_some(wire::StreamOptions {
            include_usage: true,
        }),
    }
}

/// The neutral messages in the wire format. Tool messages carry text only, so the images of
/// a run of tool results follow it as one user message of image parts.
pub fn messages(all: &[ChatMessage]) -> Vec<wire::RequestMessage> {
    let mut out = Vec::with_capacity(all.len());
    let mut tool_images: Vec<wire::ContentPart> = Vec::new();
    for (i, m) in all.iter().enumerate() {
        out.push(message(m));
        if m.role == Role::Tool {
            tool_images.extend(m.images.iter().map(image_part));
            let run_ends = all.get(i + 1).is_none_or(|next| next.role != Role::Tool);
            if run_ends && !tool_images.is_empty() {
                let mut parts = vec![wire::ContentPart::Text {
                    text: "The images the tool results above returned:".into(),
                }];
                parts.append(&mut tool_images);
                out.push(wire::RequestMessage {
                    role: wire::MessageRole::User,
                    content: Some(wire::Content::Parts(parts)),
                    name: None,
                    tool_calls: None,
                    tool_call_id: None,
                });
            }
        }
    }
    out
}

/// An image as a Chat Completions part: a `data:` URL, never a link.
fn image_part(i: &crate::llm::ImagePart) -> wire::ContentPart {
    wire::ContentPart::ImageUrl {
        image_url: wire::ImageUrl {
            url: i.data_url(),
            detail: None,
        },
    }
}

/// One neutral message in the wire format (a tool message's images left to [`messages`]).
pub fn message(m: &ChatMessage) -> wire::RequestMessage {
    let text = |s: &str| Some(wire::Content::Text(s.to_owned()));
    let (role, content) = match m.role {
        Role::System => (wire::MessageRole::System, text(&m.content)),
        Role::User if !m.images.is_empty() => {
            let mut parts = Vec::with_capacity(m.images.len() + 1);
            if !m.content.is_empty() {
                parts.push(wire::ContentPart::Text {
                    text: m.content.clone(),
                });
            }
            parts.extend(m.images.iter().map(image_part));
            (wire::MessageRole::User, Some(wire::Content::Parts(parts)))
        }
        Role::User => (wire::MessageRole::User, text(&m.content)),
        Role::Tool => (wire::MessageRole::Tool, text(&m.content)),
        Role::Assistant if !m.tool_calls.is_empty() && m.content.is_empty() => {
            (wire::MessageRole::Assistant, None)
        }
        Role::Assistant => (wire::MessageRole::Assistant, text(&m.content)),
    };
    let tool_calls = (!m.tool_calls.is_empty()).then(|| {
        m.tool_calls
            .iter()
            .map(|c| wire::ToolCall {
                id: Some(c.id.clone()),
                kind: "function".into(),
                function: wire::FunctionCall {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                },
            })
            .collect()
    });
    wire::RequestMessage {
        role,
        content,
        name: None,
        tool_calls,
        tool_call_id: match m.role {
            Role::Tool => Some(m.tool_call_id.clone().unwrap_or_default()),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests;
