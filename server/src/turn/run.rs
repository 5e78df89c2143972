//! One agent turn: call the model, run the tools it asks for, feed the results back, repeat
//! until it answers or a hard stop (iterations, repeated tool failures, cancellation, the
//! turn deadline, shutdown). Records its [`TurnEvent`]s in its log as it goes, for whoever
//! follows it; a client leaving does not stop it. Each finished step is stored before the
//! next model call ([`crate::turn::store`]); `done` is sent only once the whole turn is stored.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;
use uuid::Uuid;

use crate::cluster::control::{StopReason, TurnControl};
use crate::db::models::message::NewMessage;
use crate::domain::{MessageRole, MessageStatus};
use crate::llm::{self, ChatMessage, ChatRequest, ToolChoice};
use crate::tools::ToolContext;
use crate::turn::context::StoredToolCall;
use crate::turn::ending::{final_event, unsaved, Ending};
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::events::{FinishReason, TurnEvent};
use crate::turn::fallback::{CallPolicy, ModelCall};
use crate::turn::model_call::ModelOutcome;
use crate::turn::pending_start::PendingStart;
use crate::turn::record::{clamp_i64, incomplete_assistant, millis, TurnRecord};
use crate::turn::store::Persisted;
use crate::turn::turn_log::EventSink;

impl TurnEngine {
    /// Runs the turn to its end, recording events in `events`, then stores its messages and
    /// releases the conversation. Never panics; never runs past the turn deadline.
    pub(crate) async fn run(&self, turn: PreparedTurn, events: EventSink, control: TurnControl) {
        let deadline = {
            let control = control.clone();
            let limit = self.settings.turn_timeout;
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                control.stop(StopReason::Deadline);
            })
        };
        let emit = |e: TurnEvent| {
            let events = events.clone();
            async move {
                let _ = events.send(e).await;
            }
        };
        let started = Instant::now();
        let mut record = TurnRecord::default();
        // The turn owns its only copy of the history (an open stream holds it for its life).
        let mut turn = turn;
        let input = std::mem::take(&mut turn.input);
        let start = turn.start.take();
        if start.is_none() {
            // Already committed: announce it now (otherwise the commit does).
            emit(TurnEvent::TurnStart {
                message_id: turn.user_message_id,
            })
            .await;
        }
        let ending = self
            .iterate(&turn, input, start, &events, &control, &mut record)
            .await;
        let label = match &ending {
            Ending::Finished(reason) => reason.as_str(),
            Ending::Failed { .. } | Ending::Unstored => "error",
        };
        self.metrics.chat_turns.with_label_values(&[label]).inc();
        self.metrics
            .turn_duration
            .observe(started.elapsed().as_secs_f64());
        let overrun = record.overrun;
        if overrun > 0 {
            self.metrics
                .budget_overrun_tokens
                .with_label_values(&[&turn.model])
                .inc_by(overrun);
        }
        deadline.abort();

        let last_assistant = record.last_assistant;
        let shutdown = control.stopped() == Some(StopReason::Shutdown);
        let last = final_event(&ending, last_assistant, shutdown);
        let persisted = if matches!(ending, Ending::Unstored) {
            // Unconfirmed is not always rolled back: the connection may have died with the
            // COMMIT on its way. Releasing is right either way: it only touches this turn's
            // claim, and settling a hold that is not there charges nothing.
            let outstanding = turn.outstanding.lock().ok().and_then(|mut o| o.take());
            let hold = outstanding.unwrap_or_else(|| turn.first_call.0.clone());
            self.abandon(turn.turn_id, turn.conversation_id, Some(hold))
                .await;
            Persisted::Lost
        } else {
            let deadline = started + self.settings.turn_timeout;
            self.persist(&turn, record, deadline, &last).await
        };
        let stored = matches!(persisted, Persisted::Stored);
        // A stored answer: the conversation may get its title (after `done`, in the
        // background). API calls carry their own titles.
        let titled = stored
            && self.settings.auto_titles
            && matches!(ending, Ending::Finished(FinishReason::Stop))
            && turn.client_tools.is_empty()
            && turn.wants_title;
        let event = match (ending, persisted) {
            (_, Persisted::Salvaged(event)) => event,
            (Ending::Finished(_) | Ending::Failed { .. }, Persisted::Lost) => unsaved(),
            _ => last,
        };
        emit(event).await;
        self.announce(&events);
        if titled {
            self.spawn_title(turn.user_id, turn.conversation_id, turn.model.clone());
        }
    }

    async fn iterate(
        &self,
        turn: &PreparedTurn,
        mut messages: Vec<ChatMessage>,
        mut start: Option<PendingStart>,
        events: &EventSink,
        control: &TurnControl,
        record: &mut TurnRecord,
    ) -> Ending {
        let mut role = turn.role.clone();
        let mut consecutive_failures: HashMap<String, u32> = HashMap::new();
        let ctx = ToolContext {
            user_id: turn.user_id,
            username: turn.username.clone(),
            conversation_id: turn.conversation_id,
        };
        for iteration in 1..=self.settings.max_iterations {
            let (hold, max_tokens) = if iteration == 1 {
                turn.first_call.clone()
            } else {
                match self
                    .budget_for_next_call(turn, &messages, &role.tools, record)
                    .await
                {
                    Ok(Some((granted, role_now))) => {
                        role = role_now.narrowed(turn.assistant.as_deref());
                        granted
                    }
                    Ok(None) => return Ending::Finished(FinishReason::BudgetExhausted),
                    Err(e) => return e,
                }
            };
            if let Ok(mut o) = turn.outstanding.lock() {
                *o = Some(hold.clone());
            }
            // The role as this step's commit read it: an admin's revocation stops the turn
            // before its next call; the reservation just granted is settled at nothing.
            if !crate::llm::catalogue::allows(&role.models, &turn.model) {
                record.pending = Some((hold, crate::db::models::budget::Spend::default()));
                return Ending::Failed {
                    code: "model_not_allowed".into(),
                    message: format!(
                        "the role `{}` may no longer use the model `{}`",
                        role.name, turn.model
                    ),
                };
            }
            let request = ChatRequest {
                model: turn.model.clone(),
                messages: messages.clone(),
                tools: crate::turn::api::with_client_tools(
                    Self::offered_tools(&turn.tools, &role.tools),
                    &turn.client_tools,
                ),
                tool_choice: ToolChoice::Auto,
                max_tokens: Some(max_tokens),
                temperature: turn
                    .assistant
                    .as_ref()
                    .and_then(|a| a.params.temperature)
                    .map(|t| t as f32),
            };
            let input_estimate = Self::count_input(&messages, &role.tools, &turn.tools);
            events.begin_step(iteration);
            let started = Instant::now();
            let policy = CallPolicy {
                role_models: &role.models,
                money: hold.money.as_ref(),
                caller: turn.user_id,
            };
            let ModelCall { outcome, answered } = self
                .call_model(
                    request,
                    input_estimate,
                    start.take(),
                    events,
                    control,
                    policy,
                )
                .await;
            let elapsed = millis(started.elapsed());
            let (text, calls, usage) = match outcome {
                ModelOutcome::Completed {
                    text, calls, usage, ..
                } => (text, calls, usage),
                ModelOutcome::Stopped { text, reason } => {
                    // Charged for what was generated: never zero, never the whole hold.
                    let output = llm::estimate_tokens(&text);
                    let m = incomplete_assistant(
                        turn,
                        &answered,
                        text,
                        reason.status_reason(),
                        elapsed,
                    );
                    let usage = llm::Usage::new(input_estimate, output);
                    record.account(turn, hold, m.id, usage, &answered);
                    record.last_assistant = Some(m.id);
                    record.messages.push(m);
                    return Ending::Finished(FinishReason::Cancelled);
                }
                ModelOutcome::Failed { text, error, .. } => {
                    let (input, output) = if text.is_empty() {
                        (0, 0)
                    } else {
                        (input_estimate, llm::estimate_tokens(&text))
                    };
                    let m = incomplete_assistant(turn, &answered, text, error.code(), elapsed);
                    record.account(turn, hold, m.id, llm::Usage::new(input, output), &answered);
                    record.last_assistant = Some(m.id);
                    record.messages.push(m);
                    return Ending::Failed {
                        code: error.code().to_owned(),
                        message: error.log().to_owned(),
                    };
                }
                ModelOutcome::Unstored(error) => {
                    tracing::error!(%error, conversation = %turn.conversation_id,
                        "the start of a turn did not commit");
                    return Ending::Unstored;
                }
            };
            let _ = events
                .send(TurnEvent::Usage {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                })
                .await;
            // Calls of the client's tools end the turn: the client runs them.
            let handed_back = crate::turn::api::client_calls(&turn.client_tools, &calls);
            let calls = handed_back.clone().unwrap_or(calls);
            let stored_calls: Vec<StoredToolCall> =
                calls.iter().map(StoredToolCall::from_call).collect();
            let assistant_id = Uuid::new_v4();
            let citations = if calls.is_empty() {
                crate::turn::cite::citations(&self.pool, turn.user_id, &text).await
            } else {
                None
            };
            record.account(turn, hold, assistant_id, usage, &answered);
            record.last_assistant = Some(assistant_id);
            record.messages.push(NewMessage {
                id: assistant_id,
                conversation_id: turn.conversation_id,
                role: MessageRole::Assistant,
                content: text.clone(),
                tool_calls: (!stored_calls.is_empty())
                    .then(|| serde_json::to_value(&stored_calls).unwrap_or(Value::Null)),
                tool_call_id: None,
                attachments: None,
                citations,
                status: MessageStatus::Complete,
                status_reason: None,
                // The catalogue name the user picks from (the upstream id is in the span).
                model: Some(answered.model.clone()),
                input_tokens: Some(clamp_i64(usage.input_tokens)),
                output_tokens: Some(clamp_i64(usage.output_tokens)),
                duration_ms: Some(elapsed),
            });
            if calls.is_empty() {
                return Ending::Finished(FinishReason::Stop);
            }
            if handed_back.is_some() {
                crate::turn::api::hand_back(&stored_calls, events);
                return Ending::Finished(FinishReason::ToolCalls);
            }
            if let Some(ending) = self
                .run_tools(
                    turn,
                    &ctx,
                    &stored_calls,
                    calls,
                    text,
                    &role,
                    control,
                    events,
                    record,
                    &mut messages,
                    &mut consecutive_failures,
                )
                .await
            {
                return ending;
            }
            if control.stopped().is_some() {
                return Ending::Finished(FinishReason::Cancelled);
            }
            if iteration == self.settings.max_iterations {
                return Ending::Finished(FinishReason::MaxIterations);
            }
        }
        // Only without any model call (a limit of zero iterations) is the start still here.
        if let Some(start) = start {
            if start.commit(events).await.is_err() {
                return Ending::Unstored;
            }
        }
        Ending::Finished(FinishReason::MaxIterations)
    }
}
