//! A turn's events as Chat Completions answers: `chat.completion.chunk` events ending in
//! `data: [DONE]`, or one `chat.completion`.
//!
//! Server-side tool activity rides in an extra `agentchat` field that OpenAI clients ignore:
//! the first chunk carries `{"conversation_id"}`; a server tool's call and result each come
//! as a chunk with an empty delta and the turn event (`{"type": "tool_call" | "tool_result",
//! ...}`); the finishing chunk carries `{"type": "done", "finish_reason"}` with the agent's
//! own reason. A non-streamed answer has `agentchat: {conversation_id, events, finish_reason}`.

use crate::turn::Follower;
use actix_web::{HttpRequest, HttpResponse};
use actix_web_lab::sse;
use serde::Serialize;
use uuid::Uuid;

use super::error::{self, OpenAiError};
use super::request::Answer;
use crate::llm::openai::wire;
use crate::turn::{FinishReason, TurnEvent};

/// What every chunk of one answer shares.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: String,
    pub created: i64,
    pub answer: Answer,
    pub conversation_id: Uuid,
    /// Names of the client's tools: their calls go in `tool_calls`, others in `agentchat`.
    pub client_tools: Vec<String>,
}

impl Meta {
    pub fn new(
        turn_id: Uuid,
        conversation_id: Uuid,
        answer: Answer,
        client_tools: Vec<String>,
    ) -> Self {
        Self {
            id: format!("chatcmpl-{}", turn_id.simple()),
            created: chrono::Utc::now().timestamp(),
            answer,
            conversation_id,
            client_tools,
        }
    }

    fn chunk(&self, delta: wire::Delta, finish_reason: Option<&str>) -> wire::ChatCompletionChunk {
        wire::ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.answer.model.clone(),
            choices: vec![wire::ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish_reason.map(str::to_owned),
            }],
            usage: None,
            error: None,
        }
    }

    fn is_client_tool(&self, name: &str) -> bool {
        self.client_tools.iter().any(|t| t == name)
    }
}

/// The extension field.
#[derive(Serialize)]
#[serde(untagged)]
enum Extension<'a> {
    Conversation {
        conversation_id: Uuid,
    },
    Event(&'a TurnEvent),
    Summary {
        conversation_id: Uuid,
        finish_reason: Option<FinishReason>,
        events: Vec<&'a TurnEvent>,
    },
}

#[derive(Serialize)]
struct Extended<'a, T> {
    #[serde(flatten)]
    body: T,
    #[serde(skip_serializing_if = "Option::is_none")]
    agentchat: Option<Extension<'a>>,
}

fn encode<T: Serialize>(body: T, agentchat: Option<Extension<'_>>) -> String {
    serde_json::to_string(&Extended { body, agentchat }).unwrap_or_else(|_| {
        r#"{"error":{"message":"a chunk could not be encoded","type":"server_error","param":null,"code":"internal"}}"#
            .to_owned()
    })
}

/// OpenAI's finish reason for the agent's.
fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::MaxIterations | FinishReason::BudgetExhausted => "length",
        // A paused turn goes on once decided (in the browser); this call ends here, and the
        // `approval_required` event rides in the `agentchat` extension.
        FinishReason::Stop
        | FinishReason::ToolFailures
        | FinishReason::Cancelled
        | FinishReason::AwaitingApproval => "stop",
    }
}

fn arguments_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Turns events into `data:` payloads, in order.
struct Chunker {
    meta: Meta,
    usage: wire::Usage,
    client_calls: u32,
    ended: bool,
}

impl Chunker {
    fn on(&mut self, e: &TurnEvent) -> Vec<String> {
        let m = &self.meta;
        match e {
            TurnEvent::TurnStart { .. } => {
                let delta = wire::Delta {
                    role: Some("assistant".into()),
                    content: Some(String::new()),
                    tool_calls: None,
                };
                let ext = Extension::Conversation {
                    conversation_id: m.conversation_id,
                };
                vec![encode(m.chunk(delta, None), Some(ext))]
            }
            TurnEvent::TextDelta { text } => {
                let delta = wire::Delta {
                    content: Some(text.clone()),
                    ..Default::default()
                };
                vec![encode(m.chunk(delta, None), None)]
            }
            TurnEvent::ToolCall(c) if m.is_client_tool(&c.name) => {
                let index = self.client_calls;
                self.client_calls += 1;
                let delta = wire::Delta {
                    tool_calls: Some(vec![wire::ToolCallDelta {
                        index: Some(index),
                        id: Some(c.id.clone()),
                        kind: Some("function".into()),
                        function: Some(wire::FunctionDelta {
                            name: Some(c.name.clone()),
                            arguments: Some(arguments_text(&c.arguments)),
                        }),
                    }]),
                    ..Default::default()
                };
                vec![encode(m.chunk(delta, None), None)]
            }
            TurnEvent::ToolCall(_) | TurnEvent::ToolResult(_) | TurnEvent::ApprovalRequired(_) => {
                vec![encode(
                    m.chunk(wire::Delta::default(), None),
                    Some(Extension::Event(e)),
                )]
            }
            TurnEvent::Usage {
                input_tokens,
                output_tokens,
            } => {
                self.usage = wire::Usage::new(
                    self.usage.prompt_tokens + input_tokens,
                    self.usage.completion_tokens + output_tokens,
                );
                Vec::new()
            }
            TurnEvent::Done {
                finish_reason: r, ..
            } => {
                self.ended = true;
                let mut out = vec![encode(
                    m.chunk(wire::Delta::default(), Some(finish_reason(*r))),
                    Some(Extension::Event(e)),
                )];
                if m.answer.include_usage {
                    let last = wire::ChatCompletionChunk {
                        choices: Vec::new(),
                        usage: Some(self.usage),
                        ..m.chunk(wire::Delta::default(), None)
                    };
                    out.push(encode(last, None));
                }
                out.push("[DONE]".to_owned());
                out
            }
            TurnEvent::Error(err) => {
                self.ended = true;
                vec![encode(
                    error::object("server_error", &err.code, &err.message, None),
                    None,
                )]
            }
        }
    }
}

/// The turn as a `text/event-stream` of chunks.
pub fn stream(
    req: &HttpRequest,
    follower: Follower,
    meta: Meta,
    keep_alive: std::time::Duration,
) -> HttpResponse {
    let chunker = Chunker {
        meta,
        usage: wire::Usage::default(),
        client_calls: 0,
        ended: false,
    };
    // The turn's log is read straight into the response (no task in between: one wake-up
    // per event, as on the native route).
    let events =
        futures_util::stream::unfold((follower, chunker), |(mut rx, mut chunker)| async move {
            if chunker.ended {
                return None;
            }
            let payloads = match rx.next().await {
                Some((_, e)) => chunker.on(&e),
                // The turn task ended without a last event (never in practice): say so.
                None => {
                    chunker.ended = true;
                    vec![encode(
                        error::object("server_error", "internal", "the reply ended early", None),
                        None,
                    )]
                }
            };
            let items: Vec<sse::Event> = payloads
                .into_iter()
                .map(|p| sse::Event::Data(sse::Data::new(p)))
                .collect();
            Some((futures_util::stream::iter(items), (rx, chunker)))
        });
    let flat = futures_util::StreamExt::flatten(events);
    crate::routes::event_stream::respond(req, flat, keep_alive)
}

/// The whole turn as one `chat.completion` (or the error it ended with).
pub async fn complete(mut follower: Follower, meta: Meta) -> Result<HttpResponse, OpenAiError> {
    let mut events = Vec::new();
    while let Some((_, e)) = follower.next().await {
        events.push(e);
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut usage = wire::Usage::default();
    let mut finish = None;
    let mut activity = Vec::new();
    for e in &events {
        match e {
            TurnEvent::TextDelta { text: t } => text.push_str(t),
            TurnEvent::ToolCall(c) if meta.is_client_tool(&c.name) => calls.push(wire::ToolCall {
                id: Some(c.id.clone()),
                kind: "function".into(),
                function: wire::FunctionCall {
                    name: c.name.clone(),
                    arguments: arguments_text(&c.arguments),
                },
            }),
            TurnEvent::ToolCall(_) | TurnEvent::ToolResult(_) | TurnEvent::ApprovalRequired(_) => {
                activity.push(e)
            }
            TurnEvent::Usage {
                input_tokens,
                output_tokens,
            } => {
                usage = wire::Usage::new(
                    usage.prompt_tokens + input_tokens,
                    usage.completion_tokens + output_tokens,
                )
            }
            TurnEvent::Done { finish_reason, .. } => finish = Some(*finish_reason),
            TurnEvent::Error(err) => return Err(OpenAiError::turn_failed(&err.code, &err.message)),
            TurnEvent::TurnStart { .. } => {}
        }
    }
    let Some(reason) = finish else {
        return Err(OpenAiError::turn_failed(
            "internal",
            "the reply ended early",
        ));
    };
    let body = wire::ChatCompletion {
        id: meta.id.clone(),
        object: "chat.completion".into(),
        created: meta.created,
        model: meta.answer.model.clone(),
        choices: vec![wire::Choice {
            index: 0,
            message: wire::ResponseMessage {
                role: "assistant".into(),
                content: (!text.is_empty() || calls.is_empty()).then_some(text),
                tool_calls: (!calls.is_empty()).then_some(calls),
                refusal: None,
            },
            finish_reason: Some(finish_reason(reason).to_owned()),
        }],
        usage: Some(usage),
        error: None,
    };
    let ext = Extension::Summary {
        conversation_id: meta.conversation_id,
        finish_reason: Some(reason),
        events: activity,
    };
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(encode(body, Some(ext))))
}
