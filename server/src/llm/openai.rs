//! OpenAI Chat Completions adapter (also fits OpenAI-compatible servers such as
//! vLLM, Ollama, llama.cpp or LiteLLM).

use std::collections::{BTreeMap, VecDeque};

use async_trait::async_trait;
use eventsource_stream::Event;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::http::{self, HttpSettings, SseDecoder};
use super::{
    host_of, ChatMessage, ChatRequest, EventStream, FinishReason, LlmError, LlmProvider, Role,
    StreamEvent, ToolCall, ToolChoice, Usage,
};
use crate::shard::Sharded;

/// Talks to `POST {base_url}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    base_url: String,
    api_key: Option<String>,
    settings: HttpSettings,
    /// One client (and keep-alive pool) per thread: see [`crate::shard`].
    clients: Sharded<reqwest::Client>,
}

impl OpenAiProvider {
    /// Creates the provider. `base_url` is like `https://api.openai.com/v1`
    /// (a trailing slash is ignored); `api_key` is sent as a bearer token when set.
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
        // api.openai.com rejects `max_tokens` for reasoning models; compatible
        // servers often only know `max_tokens`.
        let official = host_of(&self.base_url).is_some_and(|h| h == "api.openai.com");
        let max_tokens_field = if official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        build_body(req, self.settings.streaming, max_tokens_field)
    }
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    fn provider_name(&self) -> &'static str {
        "openai"
    }

    fn server_address(&self) -> Option<String> {
        host_of(&self.base_url)
    }

    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let started = Instant::now();
        let url = format!("{}/chat/completions", self.base_url);
        let body = self.request_body(&req);
        let resp = http::send_with_retry(&self.settings, started, || {
            let mut rb = self.clients.current().post(&url).json(&body);
            if let Some(key) = &self.api_key {
                rb = rb.bearer_auth(key);
            }
            rb
        })
        .await?;

        if !self.settings.streaming || http::is_json_response(&resp) {
            let value = http::read_json_body(resp, &self.settings, started).await?;
            return Ok(http::events_from(parse_completion(&value)?));
        }
        let events = http::sse_events(resp, &self.settings, started);
        Ok(http::decode_sse(events, ChunkDecoder::default()))
    }
}

/// Builds the Chat Completions request body.
fn build_body(req: &ChatRequest, streaming: bool, max_tokens_field: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(message_json).collect()),
    );
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(max) = req.max_tokens {
        body.insert(max_tokens_field.into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if streaming {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    } else {
        body.insert("stream".into(), json!(false));
    }
    Value::Object(body)
}

fn message_json(m: &ChatMessage) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Assistant => {
            if m.tool_calls.is_empty() {
                json!({"role": "assistant", "content": m.content})
            } else {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
                let content = if m.content.is_empty() {
                    Value::Null
                } else {
                    json!(m.content)
                };
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
    }
}

/// Maps an OpenAI `finish_reason`.
fn map_finish_reason(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// Some compatible servers report `stop` although the message carries tool calls.
fn normalize_finish(reason: FinishReason, has_tool_calls: bool) -> FinishReason {
    if has_tool_calls && reason == FinishReason::Stop {
        FinishReason::ToolCalls
    } else {
        reason
    }
}

fn parse_usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

fn in_band_error(v: &Value) -> Option<LlmError> {
    let err = v.get("error").filter(|e| !e.is_null())?;
    let message = http::error_message_from_json(v).unwrap_or_else(|| err.to_string());
    let status = err
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500);
    if status == 429 {
        return Some(LlmError::RateLimited { retry_after: None });
    }
    Some(LlmError::Upstream {
        status,
        message: super::truncate_chars(&message, http::MAX_ERROR_MESSAGE_CHARS),
    })
}

/// Parses a non-streamed `chat.completion` object into events.
fn parse_completion(v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
    if let Some(err) = in_band_error(v) {
        return Err(err);
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| LlmError::Malformed("response has no choices".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| LlmError::Malformed("choice has no message".into()))?;
    let mut events = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str) {
        if !text.is_empty() {
            events.push(StreamEvent::TextDelta(text.to_string()));
        }
    }
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (index, c) in calls.iter().enumerate() {
            let f = c.get("function");
            let name = f
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| LlmError::Malformed("tool call without a name".into()))?
                .to_string();
            let arguments = match f.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{index}"));
            events.push(StreamEvent::ToolCallStart {
                index,
                id: id.clone(),
                name: name.clone(),
            });
            tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
    }
    let finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(map_finish_reason)
        .unwrap_or(FinishReason::Stop);
    events.push(StreamEvent::Completed {
        finish_reason: normalize_finish(finish, !tool_calls.is_empty()),
        tool_calls,
        usage: parse_usage(v),
        response_model: v.get("model").and_then(Value::as_str).map(str::to_string),
    });
    Ok(events)
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// Assembles `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl ChunkDecoder {
    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        let Some(finish) = self.finish_reason.take() else {
            return Err(LlmError::StreamEndedEarly);
        };
        let calls = std::mem::take(&mut self.calls);
        let tool_calls: Vec<ToolCall> = calls
            .into_iter()
            .map(|(index, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{index}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        out.push_back(StreamEvent::Completed {
            finish_reason: normalize_finish(finish, !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage,
            response_model: self.model.take(),
        });
        Ok(())
    }

    fn on_tool_delta(&mut self, position: usize, d: &Value, out: &mut VecDeque<StreamEvent>) {
        let index = d
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(position);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = d.get("id").and_then(Value::as_str) {
            if call.id.is_empty() && !id.is_empty() {
                call.id = id.to_string();
            }
        }
        let f = d.get("function");
        if let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str) {
            if call.name.is_empty() {
                call.name = name.to_string();
            }
        }
        if let Some(args) = f.and_then(|f| f.get("arguments")).and_then(Value::as_str) {
            call.arguments.push_str(args);
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            out.push_back(StreamEvent::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }
}

impl SseDecoder for ChunkDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            self.complete(out)?;
            return Ok(true);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "invalid JSON chunk ({e}): {}",
                super::truncate_chars(data, 200)
            ))
        })?;
        if let Some(err) = in_band_error(&v) {
            return Err(err);
        }
        if !v.is_object() {
            return Err(LlmError::Malformed(format!(
                "unexpected chunk: {}",
                super::truncate_chars(data, 200)
            )));
        }
        if self.model.is_none() {
            if let Some(m) = v
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
            {
                self.model = Some(m.to_string());
            }
        }
        if let Some(u) = parse_usage(&v) {
            self.usage = Some(u);
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(false);
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text.to_string()));
                }
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (position, d) in calls.iter().enumerate() {
                    self.on_tool_delta(position, d, out);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(map_finish_reason(reason));
        }
        // Finished with its usage: nothing else is needed, `[DONE]` or not.
        if self.finish_reason.is_some() && self.usage.is_some() {
            self.complete(out)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn on_eof(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        self.complete(out)
    }

    fn finished_message(&self) -> bool {
        self.finish_reason.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn body_shape() {
        let mut req = ChatRequest::new(
            "gpt-x",
            vec![
                ChatMessage::system("be nice"),
                ChatMessage::user("hi"),
                ChatMessage::assistant_tool_calls(
                    "",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "calculator".into(),
                        arguments: "{\"expression\":\"1+1\"}".into(),
                    }],
                ),
                ChatMessage::tool_result("c1", "2"),
            ],
        );
        let body = build_body(&req, true, "max_tokens");
        assert!(body.get("tools").is_none());
        assert!(body.get("tool_choice").is_none());
        assert_eq!(body["stream_options"]["include_usage"], json!(true));
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(body["messages"][2]["tool_calls"][0]["type"], "function");
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        req.tools.push(ToolSpec {
            name: "calculator".into(),
            description: "calc".into(),
            parameters: json!({"type": "object"}),
        });
        req.tool_choice = ToolChoice::Named("calculator".into());
        let body = build_body(&req, false, "max_tokens");
        assert_eq!(body["tool_choice"]["function"]["name"], "calculator");
        assert_eq!(body["tools"][0]["function"]["name"], "calculator");
        assert_eq!(body["stream"], json!(false));
    }

    fn ev(data: &str) -> Event {
        Event {
            event: "message".into(),
            data: data.into(),
            ..Default::default()
        }
    }

    #[test]
    fn finish_with_usage_completes_without_done() {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        let chunk = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#;
        assert_eq!(d.on_event(&ev(chunk), &mut out), Ok(true));
        assert!(matches!(out.back(), Some(StreamEvent::Completed { .. })));
    }

    #[tokio::test]
    async fn a_finished_message_whose_stream_never_ends_is_accepted_promptly() {
        use futures_util::StreamExt;
        let chunk =
            r#"{"choices":[{"index":0,"delta":{"content":"all of it"},"finish_reason":"stop"}]}"#;
        let events = futures_util::stream::iter([Ok(ev(chunk))])
            .chain(futures_util::stream::pending())
            .boxed();
        let started = std::time::Instant::now();
        let got: Vec<_> = http::decode_sse(events, ChunkDecoder::default())
            .collect()
            .await;
        assert!(started.elapsed() < http::AFTER_FINISH_WAIT * 2);
        assert!(
            matches!(got.last(), Some(Ok(StreamEvent::Completed { .. }))),
            "{got:?}"
        );
    }

    #[test]
    fn done_without_finish_is_incomplete() {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        assert_eq!(
            d.on_event(&ev("[DONE]"), &mut out),
            Err(LlmError::StreamEndedEarly)
        );
    }

    #[test]
    fn in_stream_error_chunk() {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        let chunk = r#"{"error":{"message":"server overloaded","type":"server_error","code":503}}"#;
        assert_eq!(
            d.on_event(&ev(chunk), &mut out),
            Err(LlmError::Upstream {
                status: 503,
                message: "server overloaded".into()
            })
        );
        let chunk = r#"{"error":{"message":"boom","code":"internal"}}"#;
        assert!(matches!(
            d.on_event(&ev(chunk), &mut out),
            Err(LlmError::Upstream { status: 500, .. })
        ));
    }

    #[test]
    fn stop_with_tool_calls_is_normalized_and_ids_filled() {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        let c1 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"b","arguments":"{}"}}]}}]}"#;
        let c2 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"a","arguments":"{\"k\""}}]}}]}"#;
        let c3 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"stop"}]}"#;
        for c in [c1, c2, c3] {
            assert_eq!(d.on_event(&ev(c), &mut out), Ok(false));
        }
        assert_eq!(d.on_event(&ev("[DONE]"), &mut out), Ok(true));
        match out.back() {
            Some(StreamEvent::Completed {
                finish_reason,
                tool_calls,
                ..
            }) => {
                assert_eq!(*finish_reason, FinishReason::ToolCalls);
                assert_eq!(tool_calls[0].id, "x");
                assert_eq!(tool_calls[0].arguments, "{\"k\":1}");
                assert_eq!(tool_calls[1].id, "call_1");
                assert_eq!(tool_calls[1].name, "b");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn official_host_uses_max_completion_tokens() {
        let p = OpenAiProvider::new("https://api.openai.com/v1/", None, HttpSettings::default())
            .unwrap();
        assert_eq!(p.base_url(), "https://api.openai.com/v1");
        let mut req = ChatRequest::new("m", vec![ChatMessage::user("x")]);
        req.max_tokens = Some(5);
        let body = p.request_body(&req);
        assert_eq!(body["max_completion_tokens"], 5);
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn finish_then_eof_completes() {
        let mut d = ChunkDecoder::default();
        let mut out = VecDeque::new();
        let chunk = r#"{"model":"m","choices":[{"index":0,"delta":{"content":"hey"},"finish_reason":"stop"}]}"#;
        assert_eq!(d.on_event(&ev(chunk), &mut out), Ok(false));
        assert_eq!(d.on_eof(&mut out), Ok(()));
        assert_eq!(out.len(), 2);
        assert!(matches!(
            out.back(),
            Some(StreamEvent::Completed {
                finish_reason: FinishReason::Stop,
                ..
            })
        ));
    }
}
