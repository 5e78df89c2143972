//! Running the tool calls of a model message: concurrently, checked against the role as it
//! is now, each with its span, metrics and audit row.

use std::collections::HashMap;
use std::time::Duration;

use tracing::Instrument;

use crate::cluster::control::StopReason;
use crate::db::models::audit::{self, NewAudit};
use crate::db::models::message::NewMessage;
use crate::llm::{self, ChatMessage, Role};
use crate::tools::{ExecutedCall, Outcome, ToolOutput};
use crate::turn::approval::pause;
use crate::turn::context::StoredToolCall;
use crate::turn::engine::Who;
use crate::turn::events::{FinishReason, ToolCallEvent, ToolResultEvent, TurnEvent};
use crate::turn::plan::Plan;
use crate::turn::step::commit::{mark_incomplete, millis, Ending, TurnRecord};
use crate::turn::step::{Answer, Step};

impl Step<'_> {
    /// Runs the tool calls of a finished model message and records their results (stored
    /// with the next model call's reservation). `Some`: the turn ends here.
    pub(in crate::turn) async fn tools(
        &self,
        plan: &Plan,
        answer: Answer,
        record: &mut TurnRecord,
        messages: &mut Vec<ChatMessage>,
        consecutive_failures: &mut HashMap<String, u32>,
    ) -> Option<Ending> {
        let Answer {
            text,
            calls,
            stored: stored_calls,
        } = answer;
        let (events, control) = (self.events, self.control);
        for c in &stored_calls {
            let _ = events
                .send(TurnEvent::ToolCall(Box::new(ToolCallEvent {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })))
                .await;
        }
        // Calls a person must confirm wait; the others run now.
        let waits = pause::gate(self.engine, plan, &calls);
        let runnable: Vec<llm::ToolCall> = calls
            .iter()
            .zip(&waits)
            .filter(|(_, w)| w.is_none())
            .map(|(c, _)| c.clone())
            .collect();
        let results = tokio::select! {
            r = self.execute_all(plan, &runnable) => r,
            _ = control.token.cancelled() => {
                let reason = control.stopped().unwrap_or(StopReason::Cancelled);
                mark_incomplete(&mut record.messages, reason.status_reason());
                return Some(Ending::Finished(FinishReason::Cancelled));
            }
        };
        let mut repeated_failure = false;
        let mut results_in_order = Vec::with_capacity(calls.len());
        let catalogue = self.engine.catalogue.now();
        let model = catalogue.get(&plan.model).map(|m| &**m);
        let mut images_in_input: usize = messages.iter().map(|m| m.images.len()).sum();
        for (call, (result, ids)) in runnable.iter().zip(results) {
            let _ = events.send(result_event(call, &result)).await;
            record.audit.push(audit_row(self.who, call, &result, ids));
            let row = result_row(self.who, call, &result);
            let mut message = ChatMessage {
                role: Role::Tool,
                content: row.content.clone(),
                tool_calls: Vec::new(),
                tool_call_id: Some(call.id.clone()),
                images: Vec::new(),
            };
            crate::turn::tool_images::attach(
                &self.engine.workspaces,
                self.who.user_id,
                self.who.conversation_id,
                model,
                &result.output,
                &mut message,
                images_in_input,
            )
            .await;
            images_in_input += message.images.len();
            results_in_order.push(message);
            record.messages.push(row);
            let count = consecutive_failures.entry(call.name.clone()).or_insert(0);
            if result.outcome == Outcome::Ok {
                *count = 0;
            } else {
                *count += 1;
                repeated_failure |= *count >= 2;
            }
        }
        if waits.iter().any(Option::is_some) {
            return Some(pause::pause(self.engine, self.who, &calls, waits, events, record).await);
        }
        messages.push(ChatMessage {
            role: Role::Assistant,
            content: text,
            tool_calls: calls,
            tool_call_id: None,
            images: Vec::new(),
        });
        messages.extend(results_in_order);
        repeated_failure.then_some(Ending::Finished(FinishReason::ToolFailures))
    }

    /// Announces the calls handed back to an API client (its own tools: the turn ends).
    pub(in crate::turn) fn hand_back(&self, calls: &[StoredToolCall]) {
        for c in calls {
            self.events
                .push(TurnEvent::ToolCall(Box::new(ToolCallEvent {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })));
        }
    }

    /// Runs the calls concurrently; results come back in call order. A tool the user's role
    /// does not allow is refused here even if the model names it without being offered it.
    pub(in crate::turn) async fn execute_all(
        &self,
        plan: &Plan,
        calls: &[llm::ToolCall],
    ) -> Vec<(ExecutedCall, TraceIds)> {
        let (tools, allowed, ctx) = (&plan.tools, &plan.role.tools, &self.ctx);
        let engine = self.engine;
        let capture = engine.settings.capture_content;
        let runs = calls.iter().map(|call| {
            let kind = if engine.tools.get(&call.name).is_some() {
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
                    engine.tools.get(&call.name).and_then(|t| t.key_scope())
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
                engine
                    .metrics
                    .tool_calls
                    .with_label_values(&[label, result.outcome.as_str()])
                    .inc();
                engine
                    .metrics
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

pub(in crate::turn) fn refused(name: &str) -> ExecutedCall {
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
pub(in crate::turn) type TraceIds = (Option<String>, Option<String>);

/// A tool call's audit row.
pub(in crate::turn) fn audit_row(
    turn: &Who,
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

/// The row that stores a tool call's result, as the model reads it.
pub(in crate::turn) fn result_row(who: &Who, call: &llm::ToolCall, r: &ExecutedCall) -> NewMessage {
    NewMessage::tool_result(
        who.conversation_id,
        call.id.clone(),
        r.output.to_model_string(),
        r.error_code,
        millis(r.duration),
    )
}

/// A tool call's result, as its followers see it.
pub(in crate::turn) fn result_event(call: &llm::ToolCall, r: &ExecutedCall) -> TurnEvent {
    TurnEvent::ToolResult(Box::new(ToolResultEvent {
        id: call.id.clone(),
        name: call.name.clone(),
        success: r.output.success,
        data: r.output.data.clone(),
        error: r.output.error.clone(),
        duration_ms: r.duration.as_millis().try_into().unwrap_or(u64::MAX),
    }))
}
