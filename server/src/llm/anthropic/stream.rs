//! Reading answers: a whole `message`, or the stream's events assembled into neutral stream
//! events (tool-use blocks in the order they started, usage, the stop reason).

use std::collections::{HashMap, VecDeque};

use eventsource_stream::Event;

use super::wire;
use crate::llm::http::{self, SseDecoder};
use crate::llm::{truncate_chars, FinishReason, LlmError, StreamEvent, ToolCall, Usage};

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

/// Converts an Anthropic error object.
pub(super) fn error(e: &wire::ErrorObject) -> LlmError {
    let status = match e.kind.as_str() {
        "rate_limit_error" => return LlmError::RateLimited { retry_after: None },
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "overloaded_error" => 529,
        _ => 500,
    };
    let message = if e.message.is_empty() {
        e.kind.clone()
    } else {
        e.message.clone()
    };
    LlmError::Upstream {
        status,
        message: truncate_chars(&message, http::MAX_ERROR_MESSAGE_CHARS),
    }
}

/// Parses a non-streamed `message` into events.
pub(super) fn parse_message(v: serde_json::Value) -> Result<Vec<StreamEvent>, LlmError> {
    let m: wire::MessageResponse = serde_json::from_value(v)
        .map_err(|e| LlmError::Malformed(format!("unexpected message: {e}")))?;
    if m.kind == "error" {
        return Err(error(&m.error.unwrap_or_default()));
    }
    let content = m
        .content
        .ok_or_else(|| LlmError::Malformed("message has no content array".into()))?;
    let mut events = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            wire::Block::Text { text } if !text.is_empty() => {
                events.push(StreamEvent::TextDelta(text));
            }
            wire::Block::ToolUse { id, name, input } => {
                let arguments = input.map_or_else(|| "{}".to_owned(), |i| i.to_string());
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
    let usage = m.usage.map(|u| Usage {
        input_tokens: u.total_input().unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        cache_read_tokens: u.cache_read_input_tokens.unwrap_or(0),
        cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
    });
    let finish_reason = m
        .stop_reason
        .as_deref()
        .map(map_stop_reason)
        .unwrap_or(FinishReason::Other("unknown".into()));
    events.push(StreamEvent::Completed {
        finish_reason,
        tool_calls,
        usage,
        response_model: m.model,
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
pub struct MessageDecoder {
    /// Tool-use blocks in the order they started (the tool-call index).
    tools: Vec<PartialToolUse>,
    /// Anthropic content block index -> position in `tools`.
    block_to_tool: HashMap<u64, usize>,
    stop_reason: Option<FinishReason>,
    pub(super) input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
    model: Option<String>,
}

impl MessageDecoder {
    fn on_block_start(&mut self, index: u64, block: wire::Block, out: &mut VecDeque<StreamEvent>) {
        match block {
            wire::Block::Text { text } if !text.is_empty() => {
                out.push_back(StreamEvent::TextDelta(text));
            }
            wire::Block::ToolUse { id, name, input } => {
                let initial_input = input
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                let position = self.tools.len();
                out.push_back(StreamEvent::ToolCallStart {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.block_to_tool.insert(index, position);
                self.tools.push(PartialToolUse {
                    id,
                    name,
                    json: String::new(),
                    initial_input,
                });
            }
            _ => {}
        }
    }

    fn on_usage(&mut self, u: wire::Usage) {
        if let Some(o) = u.output_tokens {
            self.output_tokens = Some(o);
        }
        if let Some(i) = u.total_input() {
            self.input_tokens = Some(i);
        }
        self.note_cache(&u);
    }

    /// A usage object that reports cache counts replaces the ones known so far.
    fn note_cache(&mut self, u: &wire::Usage) {
        if let Some(r) = u.cache_read_input_tokens {
            self.cache_read_tokens = r;
        }
        if let Some(w) = u.cache_creation_input_tokens {
            self.cache_write_tokens = w;
        }
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) {
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
                cache_read_tokens: self.cache_read_tokens,
                cache_write_tokens: self.cache_write_tokens,
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
    }
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
        // The `type` in the data is authoritative; the SSE `event:` line only mirrors it.
        let parsed: wire::StreamEvent = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "invalid JSON event ({e}): {}",
                truncate_chars(data, 200)
            ))
        })?;
        match parsed {
            wire::StreamEvent::MessageStart { message } => {
                if message.model.is_some() {
                    self.model = message.model;
                }
                if let Some(u) = message.usage {
                    self.input_tokens = u.total_input();
                    self.output_tokens = u.output_tokens;
                    self.note_cache(&u);
                }
            }
            wire::StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.on_block_start(index, content_block, out),
            wire::StreamEvent::ContentBlockDelta { index, delta } => match delta {
                wire::Delta::TextDelta { text } if !text.is_empty() => {
                    out.push_back(StreamEvent::TextDelta(text));
                }
                wire::Delta::InputJsonDelta { partial_json } => {
                    let tool = self
                        .block_to_tool
                        .get(&index)
                        .and_then(|p| self.tools.get_mut(*p))
                        .ok_or_else(|| {
                            LlmError::Malformed(format!(
                                "input_json_delta for unknown content block {index}"
                            ))
                        })?;
                    tool.json.push_str(&partial_json);
                }
                _ => {}
            },
            wire::StreamEvent::MessageDelta { delta, usage } => {
                if let Some(r) = delta.stop_reason {
                    self.stop_reason = Some(map_stop_reason(&r));
                }
                if let Some(u) = usage {
                    self.on_usage(u);
                }
            }
            wire::StreamEvent::MessageStop => {
                self.finish(out);
                return Ok(true);
            }
            wire::StreamEvent::Error { error: e } => return Err(error(&e)),
            wire::StreamEvent::Other => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::StreamEndedEarly)
    }
}
