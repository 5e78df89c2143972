//! Running the tool calls of a model message: concurrently, checked against the role as it
//! is now, each with its span, metrics and audit row.

use std::collections::HashMap;
use std::time::Duration;

use tracing::Instrument;
use uuid::Uuid;

use crate::cluster::control::{StopReason, TurnControl};
use crate::db::models::audit::{self, NewAudit};
use crate::db::models::message::NewMessage;
use crate::domain::{MessageRole, MessageStatus};
use crate::llm::{self, ChatMessage, Role, ToolSpec};
use crate::tools::{ExecutedCall, Outcome, Registry, ToolContext, ToolOutput};
use crate::turn::context::StoredToolCall;
use crate::turn::ending::Ending;
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::events::{FinishReason, ToolCallEvent, ToolResultEvent, TurnEvent};
use crate::turn::record::{mark_incomplete, millis, TurnRecord};
use crate::turn::sql::RoleNow;

impl TurnEngine {
    /// Runs the tool calls of a finished model message and records their results (stored
    /// with the next model call's reservation). `Some`: the turn ends here.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_tools(
        &self,
        turn: &PreparedTurn,
        ctx: &ToolContext,
        stored_calls: &[StoredToolCall],
        calls: Vec<llm::ToolCall>,
        text: String,
        role: &RoleNow,
        control: &TurnControl,
        events: &crate::turn::turn_log::EventSink,
        record: &mut TurnRecord,
        messages: &mut Vec<ChatMessage>,
        consecutive_failures: &mut HashMap<String, u32>,
    ) -> Option<Ending> {
        for c in stored_calls {
            let _ = events
                .send(TurnEvent::ToolCall(Box::new(ToolCallEvent {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })))
                .await;
        }
        // Calls a person must confirm wait; the others run now.
        let waits = self.approval_gate(turn, &calls, role);
        let runnable: Vec<llm::ToolCall> = calls
            .iter()
            .zip(&waits)
            .filter(|(_, w)| w.is_none())
            .map(|(c, _)| c.clone())
            .collect();
        let results = tokio::select! {
            r = self.execute_all(&turn.tools, ctx, &runnable, &role.tools) => r,
            _ = control.token.cancelled() => {
                let reason = control.stopped().unwrap_or(StopReason::Cancelled);
                mark_incomplete(&mut record.messages, reason.status_reason());
                return Some(Ending::Finished(FinishReason::Cancelled));
            }
        };
        let mut repeated_failure = false;
        let mut results_in_order = Vec::with_capacity(calls.len());
        for (call, (result, ids)) in runnable.iter().zip(results) {
            let _ = events.send(result_event(call, &result)).await;
            record.audit.push(audit_row(turn, call, &result, ids));
            let body = result.output.to_model_string();
            record.messages.push(NewMessage {
                id: Uuid::new_v4(),
                conversation_id: turn.conversation_id,
                role: MessageRole::Tool,
                content: body.clone(),
                tool_calls: None,
                tool_call_id: Some(call.id.clone()),
                attachments: None,
                citations: None,
                status: MessageStatus::Complete,
                status_reason: result.error_code.map(str::to_owned),
                model: None,
                input_tokens: None,
                output_tokens: None,
                duration_ms: Some(millis(result.duration)),
            });
            results_in_order.push(ChatMessage {
                role: Role::Tool,
                content: body,
                tool_calls: Vec::new(),
                tool_call_id: Some(call.id.clone()),
            });
            let count = consecutive_failures.entry(call.name.clone()).or_insert(0);
            if result.outcome == Outcome::Ok {
                *count = 0;
            } else {
                *count += 1;
                repeated_failure |= *count >= 2;
            }
        }
        if waits.iter().any(Option::is_some) {
            return Some(self.pause(turn, &calls, waits, events, record).await);
        }
        messages.push(ChatMessage {
            role: Role::Assistant,
            content: text,
            tool_calls: calls,
            tool_call_id: None,
        });
        messages.extend(results_in_order);
        repeated_failure.then_some(Ending::Finished(FinishReason::ToolFailures))
    }

    /// The tools offered to the model: registered and allowed for the user's role.
    pub(super) fn offered_tools(tools: &Registry, allowed: &[String]) -> Vec<ToolSpec> {
        tools
            .allowed_specs(allowed)
            .map(|(s, _)| ToolSpec {
                name: s.name.clone(),
                description: s.description.clone(),
                parameters: s.parameters.clone(),
            })
            .collect()
    }

    /// Runs the calls concurrently; results come back in call order. A tool the user's role
    /// does not allow is refused here even if the model names it without being offered it.
    pub(super) async fn execute_all(
        &self,
        tools: &Registry,
        ctx: &ToolContext,
        calls: &[llm::ToolCall],
        allowed: &[String],
    ) -> Vec<(ExecutedCall, TraceIds)> {
        let capture = self.settings.capture_content;
        let runs = calls.iter().map(|call| {
            let kind = if self.tools.get(&call.name).is_some() {
                "function"
            } else {
                "extension"
            };
            let span = tracing::info_span!(
                "execute_tool",
                otel.name = %format!("execute_tool {}", call.name),
                otel.kind = "internal",
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = %call.name,
                gen_ai.tool.call.id = %call.id,
                gen_ai.tool.type = kind,
                gen_ai.tool.call.arguments = tracing::field::Empty,
                gen_ai.tool.call.result = tracing::field::Empty,
                error.type = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            );
            let inner = span.clone();
            async move {
                let ids = crate::telemetry::current_trace_ids();
                let known = tools.get(&call.name).is_some();
                let left_out = if known {
                    None
                } else {
                    self.tools.get(&call.name).and_then(|t| t.key_scope())
                };
                let result = if known && !crate::tools::policy::allows(allowed, &call.name) {
                    refused(&call.name)
                } else if let Some(scope) = left_out {
                    refused_by_key_scope(&call.name, scope)
                } else {
                    tools.execute(ctx, &call.name, &call.arguments).await
                };
                if let Some(code) = result.error_code {
                    inner.record("error.type", code);
                    inner.record("otel.status_code", "ERROR");
                }
                if capture {
                    inner.record("gen_ai.tool.call.arguments", call.arguments.as_str());
                    inner.record(
                        "gen_ai.tool.call.result",
                        result.output.to_model_string().as_str(),
                    );
                }
                // Model-chosen names are labels only when they name a real tool.
                let label = if known { call.name.as_str() } else { "unknown" };
                self.metrics
                    .tool_calls
                    .with_label_values(&[label, result.outcome.as_str()])
                    .inc();
                self.metrics
                    .tool_duration
                    .with_label_values(&[label])
                    .observe(result.duration.as_secs_f64());
                (result, ids)
            }
            .instrument(span)
        });
        futures_util::future::join_all(runs).await
    }
}

/// A workspace file tool a turn of an API key without the `files` scope asked for.
fn refused_by_key_scope(name: &str, scope: crate::domain::KeyScope) -> ExecutedCall {
    refusal(format!(
        "not_permitted: this API key was made without the `{}` scope, so its turns cannot \
         use the tool `{name}`",
        scope.name()
    ))
}

pub(super) fn refused(name: &str) -> ExecutedCall {
    refusal(format!(
        "not_permitted: your role does not allow the tool `{name}` (an admin can allow it \
         under Roles & tools)"
    ))
}

fn refusal(message: String) -> ExecutedCall {
    ExecutedCall {
        output: ToolOutput::err(message),
        outcome: Outcome::Refused,
        error_code: Some("not_permitted"),
        duration: Duration::ZERO,
        result_bytes: 0,
        truncated: false,
    }
}

/// OpenTelemetry trace and span id of a tool call's span (when exporting).
pub(super) type TraceIds = (Option<String>, Option<String>);

pub(super) fn audit_row(
    turn: &PreparedTurn,
    call: &llm::ToolCall,
    r: &ExecutedCall,
    ids: TraceIds,
) -> NewAudit {
    let (arguments, arguments_truncated) = audit::capped_arguments(&call.arguments);
    NewAudit {
        user_id: Some(turn.user_id),
        username: turn.username.clone(),
        conversation_id: Some(turn.conversation_id),
        tool: call.name.clone(),
        tool_call_id: call.id.clone(),
        arguments,
        arguments_truncated,
        outcome: r.outcome.as_str().to_owned(),
        error: r.output.error.clone(),
        duration_ms: millis(r.duration),
        result_bytes: i64::try_from(r.result_bytes).unwrap_or(i64::MAX),
        trace_id: ids.0,
        span_id: ids.1,
        approval: None,
    }
}

pub(super) fn result_event(call: &llm::ToolCall, r: &ExecutedCall) -> TurnEvent {
    TurnEvent::ToolResult(Box::new(ToolResultEvent {
        id: call.id.clone(),
        name: call.name.clone(),
        success: r.output.success,
        data: r.output.data.clone(),
        error: r.output.error.clone(),
        duration_ms: r.duration.as_millis().try_into().unwrap_or(u64::MAX),
    }))
}
