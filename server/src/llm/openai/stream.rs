//! Reading answers: a whole `chat.completion`, or `chat.completion.chunk` events assembled
//! into neutral stream events (tool calls by `index`, usage, the finish reason).

use std::collections::{BTreeMap, VecDeque};

use eventsource_stream::Event;

use super::wire;
use crate::llm::http::{self, SseDecoder};
use crate::llm::{truncate_chars, FinishReason, LlmError, StreamEvent, ToolCall, Usage};

/// Maps an OpenAI `finish_reason`.
pub fn map_finish_reason(s: &str) -> FinishReason {
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

fn usage(u: wire::Usage) -> Usage {
    // `prompt_tokens` already includes the cached ones.
    Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        cache_read_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
        cache_write_tokens: 0,
    }
}

fn in_band_error(err: &wire::ErrorField) -> LlmError {
    let status = err.status().unwrap_or(500);
    if status == 429 {
        return LlmError::RateLimited { retry_after: None };
    }
    LlmError::Upstream {
        status,
        message: truncate_chars(err.message(), http::MAX_ERROR_MESSAGE_CHARS),
    }
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Parses a non-streamed `chat.completion` into events.
pub fn parse_completion(v: serde_json::Value) -> Result<Vec<StreamEvent>, LlmError> {
    let c: wire::ChatCompletion = serde_json::from_value(v)
        .map_err(|e| LlmError::Malformed(format!("unexpected completion: {e}")))?;
    if let Some(err) = &c.error {
        return Err(in_band_error(err));
    }
    let choice = c
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Malformed("response has no choices".into()))?;
    let mut events = Vec::new();
    if let Some(text) = choice.message.content.and_then(non_empty) {
        events.push(StreamEvent::TextDelta(text));
    }
    let mut tool_calls = Vec::new();
    for (index, call) in choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let id = call
            .id
            .and_then(non_empty)
            .unwrap_or_else(|| format!("call_{index}"));
        events.push(StreamEvent::ToolCallStart {
            index,
            id: id.clone(),
            name: call.function.name.clone(),
        });
        tool_calls.push(ToolCall {
            id,
            name: call.function.name,
            arguments: call.function.arguments,
        });
    }
    let finish = choice
        .finish_reason
        .as_deref()
        .map(map_finish_reason)
        .unwrap_or(FinishReason::Stop);
    events.push(StreamEvent::Completed {
        finish_reason: normalize_finish(finish, !tool_calls.is_empty()),
        tool_calls,
        usage: c.usage.map(usage),
        response_model: non_empty(c.model),
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
pub struct ChunkDecoder {
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

    fn on_tool_delta(
        &mut self,
        position: usize,
        d: wire::ToolCallDelta,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let index = d
            .index
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(position);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = d.id.filter(|id| !id.is_empty()) {
            if call.id.is_empty() {
                call.id = id;
            }
        }
        let f = d.function.unwrap_or_default();
        if let Some(name) = f.name {
            if call.name.is_empty() {
                call.name = name;
            }
        }
        if let Some(args) = f.arguments {
            call.arguments.push_str(&args);
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
        let chunk: wire::ChatCompletionChunk = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "invalid JSON chunk ({e}): {}",
                truncate_chars(data, 200)
            ))
        })?;
        if let Some(err) = &chunk.error {
            return Err(in_band_error(err));
        }
        if self.model.is_none() && !chunk.model.is_empty() {
            self.model = Some(chunk.model);
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(usage(u));
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(text) = choice.delta.content.and_then(non_empty) {
                out.push_back(StreamEvent::TextDelta(text));
            }
            for (position, d) in choice
                .delta
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                self.on_tool_delta(position, d, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(map_finish_reason(&reason));
            }
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
