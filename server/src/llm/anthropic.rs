//! Anthropic Messages API adapter.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use eventsource_stream::Event;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::http::{self, HttpSettings, SseDecoder};
use super::{
    host_of, truncate_chars, ChatRequest, EventStream, FinishReason, LlmError, LlmProvider, Role,
    StreamEvent, ToolCall, ToolChoice, Usage,
};
use crate::shard::Sharded;

/// The `anthropic-version` header value sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` used when the request does not set one (Anthropic requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Talks to `POST {base_url}/v1/messages`.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    base_url: String,
    api_key: Option<String>,
    settings: HttpSettings,
    /// One client (and keep-alive pool) per thread: see [`crate::shard`].
    clients: Sharded<reqwest::Client>,
}

impl AnthropicProvider {
    /// Creates the provider. `base_url` is like `https://api.anthropic.com`
    /// (a trailing slash is ignored); `api_key` is sent as `x-api-key` when set.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        settings: HttpSettings,
    ) -> Result<Self, LlmError> {
        let base_url = http::normalize_base_url(&base_url.into())?;
        let clients = http::build_clients(&settings)?;
        Ok(Self {
            base_url,
            api_key: api_key.filter(|k| !k.trim().is_empty()),
            settings,
            clients,
        })
    }

    /// The normalized base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The JSON body sent for `req` (exposed for tests and debugging).
    pub fn request_body(&self, req: &ChatRequest) -> Value {
        build_body(req, self.settings.streaming)
    }
}

#[async_trait]
impl LlmProvider for AnthropicProvider {
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    fn server_address(&self) -> Option<String> {
        host_of(&self.base_url)
    }

    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let started = Instant::now();
        let url = format!("{}/v1/messages", self.base_url);
        let body = self.request_body(&req);
        let resp = http::send_with_retry(&self.settings, started, || {
            let mut rb = self
                .clients
                .current()
                .post(&url)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .json(&body);
            if let Some(key) = &self.api_key {
                rb = rb.header("x-api-key", key);
            }
            rb
        })
        .await?;

        if !self.settings.streaming || http::is_json_response(&resp) {
            let value = http::read_json_body(resp, &self.settings, started).await?;
            return Ok(http::events_from(parse_message(&value)?));
        }
        let events = http::sse_events(resp, &self.settings, started);
        Ok(http::decode_sse(events, MessageDecoder::default()))
    }
}

/// Builds the Messages API request body.
fn build_body(req: &ChatRequest, streaming: bool) -> Value {
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();

    // (role, content blocks), consecutive same-role messages merged.
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        let (role, blocks): (&'static str, Vec<Value>) = match m.role {
            Role::System => continue,
            Role::User => ("user", text_block(&m.content).into_iter().collect()),
            Role::Assistant => {
                let mut blocks: Vec<Value> = text_block(&m.content).into_iter().collect();
                for c in &m.tool_calls {
                    let input = match serde_json::from_str::<Value>(&c.arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({}),
                    };
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": input,
                    }));
                }
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, mut blocks)| {
            // Anthropic wants tool_result blocks before any text in a user turn.
            blocks.sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            json!({"role": role, "content": blocks})
        })
        .collect();

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if streaming {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// Maps an Anthropic `stop_reason`.
fn map_stop_reason(s: &str) -> FinishReason {
    match s {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// Input tokens including prompt-cache reads and writes.
fn input_tokens(usage: &Value) -> Option<u64> {
    let base = usage.get("input_tokens").and_then(Value::as_u64)?;
    let cache = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| usage.get(*k).and_then(Value::as_u64))
        .sum::<u64>();
    Some(base + cache)
}

/// Converts an Anthropic error object (`{"type":"error","error":{type,message}}`).
fn error_from_json(v: &Value) -> LlmError {
    let err = v.get("error").unwrap_or(v);
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    let status = match kind {
        "rate_limit_error" => return LlmError::RateLimited { retry_after: None },
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "overloaded_error" => 529,
        _ => 500,
    };
    LlmError::Upstream {
        status,
        message: truncate_chars(&message, http::MAX_ERROR_MESSAGE_CHARS),
    }
}

/// Parses a non-streamed `message` object into events.
fn parse_message(v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_from_json(v));
    }
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Malformed("message has no content array".into()))?;
    let mut events = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                if !text.is_empty() {
                    events.push(StreamEvent::TextDelta(text.to_string()));
                }
            }
            Some("tool_use") => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| LlmError::Malformed("tool_use block without a name".into()))?
                    .to_string();
                let arguments = block
                    .get("input")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "{}".into());
                events.push(StreamEvent::ToolCallStart {
                    index: tool_calls.len(),
                    id: id.clone(),
                    name: name.clone(),
                });
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            _ => {}
        }
    }
    let usage = v.get("usage").map(|u| Usage {
        input_tokens: input_tokens(u).unwrap_or(0),
        output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
    });
    let finish_reason = v
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(map_stop_reason)
        .unwrap_or(FinishReason::Other("unknown".into()));
    events.push(StreamEvent::Completed {
        finish_reason,
        tool_calls,
        usage,
        response_model: v.get("model").and_then(Value::as_str).map(str::to_string),
    });
    Ok(events)
}

#[derive(Debug, Default)]
struct PartialToolUse {
    id: String,
    name: String,
    json: String,
    /// `content_block_start.input` serialized, used when no `input_json_delta` arrives.
    initial_input: String,
}

/// Assembles Messages API stream events.
#[derive(Debug, Default)]
pub(crate) struct MessageDecoder {
    /// Tool-use blocks in the order they started (the tool-call index).
    tools: Vec<PartialToolUse>,
    /// Anthropic content block index -> position in `tools`.
    block_to_tool: HashMap<u64, usize>,
    stop_reason: Option<FinishReason>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    model: Option<String>,
}

impl SseDecoder for MessageDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "invalid JSON event ({e}): {}",
                truncate_chars(data, 200)
            ))
        })?;
        // The `type` in the data is authoritative; the SSE `event:` line mirrors it.
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                let msg = v.get("message");
                if let Some(m) = msg.and_then(|m| m.get("model")).and_then(Value::as_str) {
                    self.model = Some(m.to_string());
                }
                if let Some(u) = msg.and_then(|m| m.get("usage")) {
                    self.input_tokens = input_tokens(u);
                    self.output_tokens = u.get("output_tokens").and_then(Value::as_u64);
                }
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = v.get("content_block");
                match block.and_then(|b| b.get("type")).and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.and_then(|b| b.get("text")).and_then(Value::as_str) {
                            if !t.is_empty() {
                                out.push_back(StreamEvent::TextDelta(t.to_string()));
                            }
                        }
                    }
                    Some("tool_use") => {
                        let get = |k: &str| {
                            block
                                .and_then(|b| b.get(k))
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string()
                        };
                        let initial_input = block
                            .and_then(|b| b.get("input"))
                            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                            .map(Value::to_string)
                            .unwrap_or_default();
                        let tool = PartialToolUse {
                            id: get("id"),
                            name: get("name"),
                            json: String::new(),
                            initial_input,
                        };
                        let position = self.tools.len();
                        out.push_back(StreamEvent::ToolCallStart {
                            index: position,
                            id: tool.id.clone(),
                            name: tool.name.clone(),
                        });
                        self.block_to_tool.insert(index, position);
                        self.tools.push(tool);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = v.get("delta");
                match delta.and_then(|d| d.get("type")).and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = delta.and_then(|d| d.get("text")).and_then(Value::as_str) {
                            if !t.is_empty() {
                                out.push_back(StreamEvent::TextDelta(t.to_string()));
                            }
                        }
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .and_then(|d| d.get("partial_json"))
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        let tool = self
                            .block_to_tool
                            .get(&index)
                            .and_then(|p| self.tools.get_mut(*p))
                            .ok_or_else(|| {
                                LlmError::Malformed(format!(
                                    "input_json_delta for unknown content block {index}"
                                ))
                            })?;
                        tool.json.push_str(part);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(map_stop_reason(r));
                }
                if let Some(u) = v.get("usage") {
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.output_tokens = Some(o);
                    }
                    if let Some(i) = input_tokens(u) {
                        self.input_tokens = Some(i);
                    }
                }
            }
            "message_stop" => {
                let tool_calls = std::mem::take(&mut self.tools)
                    .into_iter()
                    .map(|t| ToolCall {
                        id: t.id,
                        name: t.name,
                        arguments: if !t.json.is_empty() {
                            t.json
                        } else if !t.initial_input.is_empty() {
                            t.initial_input
                        } else {
                            "{}".to_string()
                        },
                    })
                    .collect();
                let usage = match (self.input_tokens, self.output_tokens) {
                    (None, None) => None,
                    (i, o) => Some(Usage {
                        input_tokens: i.unwrap_or(0),
                        output_tokens: o.unwrap_or(0),
                    }),
                };
                out.push_back(StreamEvent::Completed {
                    finish_reason: self
                        .stop_reason
                        .take()
                        .unwrap_or(FinishReason::Other("unknown".into())),
                    tool_calls,
                    usage,
                    response_model: self.model.take(),
                });
                return Ok(true);
            }
            "error" => return Err(error_from_json(&v)),
            // ping, content_block_stop and unknown future events.
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::StreamEndedEarly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ToolSpec};

    #[test]
    fn body_merges_and_orders_blocks() {
        let mut req = ChatRequest::new(
            "claude-x",
            vec![
                ChatMessage::system("sys A"),
                ChatMessage::user("hello"),
                ChatMessage::user("again"),
                ChatMessage::assistant_tool_calls(
                    "let me check",
                    vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "a".into(),
                            arguments: "{\"x\":1}".into(),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "b".into(),
                            arguments: "not json".into(),
                        },
                    ],
                ),
                ChatMessage::tool_result("t1", "r1"),
                ChatMessage::tool_result("t2", "r2"),
                ChatMessage::user("thanks"),
            ],
        );
        req.tools.push(ToolSpec {
            name: "a".into(),
            description: "A".into(),
            parameters: json!({"type": "object"}),
        });
        req.tool_choice = ToolChoice::Required;
        let body = build_body(&req, true);
        assert_eq!(body["system"], "sys A");
        assert_eq!(body["max_tokens"], 4096);
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0]["role"], "user");
        assert_eq!(msgs[0]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(msgs[1]["content"][1]["input"], json!({"x": 1}));
        assert_eq!(msgs[1]["content"][2]["input"], json!({}));
        assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
        assert_eq!(msgs[2]["content"][1]["tool_use_id"], "t2");
        assert_eq!(msgs[2]["content"][2]["type"], "text");
        assert_eq!(body["tool_choice"]["type"], "any");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    fn ev(kind: &str, data: Value) -> Event {
        Event {
            event: kind.into(),
            data: data.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn error_event_and_eof() {
        let mut d = MessageDecoder::default();
        let mut out = VecDeque::new();
        let start = json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3, "cache_read_input_tokens": 2, "output_tokens": 1}}});
        assert_eq!(d.on_event(&ev("message_start", start), &mut out), Ok(false));
        assert_eq!(d.input_tokens, Some(5));
        let err = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(
            d.on_event(&ev("error", err), &mut out),
            Err(LlmError::Upstream {
                status: 529,
                message: "Overloaded".into()
            })
        );
        assert_eq!(d.on_eof(&mut out), Err(LlmError::StreamEndedEarly));
        assert!(out.is_empty());
    }
}
