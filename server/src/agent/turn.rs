//! One agent turn: call the model, run the tools it asks for, feed the results back, repeat
//! until it answers or a hard stop (iterations, repeated tool failures, cancellation, the
//! client leaving, the turn deadline). Streams [`TurnEvent`]s as it goes and stores what it
//! produced in one commit at the end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use super::context::{self, StoredToolCall};
use super::events::{ErrorEvent, FinishReason, ToolCallEvent, ToolResultEvent, TurnEvent};
use crate::budget::Clock;
use crate::config::LlmSettings;
use crate::db::models::audit::{self, NewAudit};
use crate::db::models::budget::{Hold, Reserve};
use crate::db::models::message::NewMessage;
use crate::db::models::usage::NewUsage;
use crate::db::pipelined::Committing;
use crate::db::{self, models::turn};
use crate::llm::{
    self, ChatMessage, ChatRequest, LlmError, LlmProvider, Role, StreamEvent, ToolChoice, ToolSpec,
};
use crate::tools::{ExecutedCall, Outcome, Registry, ToolContext, ToolOutput};

/// How long storing a finished turn waits for a database connection (per attempt).
const STORE_WAIT: Duration = Duration::from_secs(30);

/// How long a turn may still be storing itself after its deadline: three attempts, each
/// waiting up to [`STORE_WAIT`] for a connection, their back-off, and room to spare. A turn's
/// claim on its conversation and its budget holds outlive the deadline by this much, so that
/// nobody takes them over while the turn is still writing.
pub const STORE_GRACE: Duration = Duration::from_secs(120);

/// Why a turn was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `POST .../cancel`.
    Cancelled,
    /// The streaming client went away.
    ClientGone,
    /// The turn ran past its deadline.
    Deadline,
    /// The server is shutting down.
    Shutdown,
}

impl StopReason {
    fn status_reason(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::ClientGone => "client_disconnected",
            Self::Deadline => "turn_timeout",
            Self::Shutdown => "shutdown",
        }
    }
}

/// Stops a running turn and remembers why (the first reason wins).
#[derive(Clone, Default)]
pub struct TurnControl {
    token: CancellationToken,
    reason: Arc<OnceLock<StopReason>>,
}

impl TurnControl {
    pub fn stop(&self, reason: StopReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    fn stopped(&self) -> Option<StopReason> {
        self.token
            .is_cancelled()
            .then(|| self.reason.get().copied().unwrap_or(StopReason::Cancelled))
    }
}

/// Everything a turn needs, shared by all turns.
#[derive(Clone)]
pub struct Agent {
    pub pool: db::Pool,
    pub llm: Arc<dyn LlmProvider>,
    pub tools: Registry,
    pub settings: Arc<LlmSettings>,
    pub clock: Clock,
    /// Limits and SSRF rules for admin-defined HTTP tools.
    pub http: crate::tools::HttpToolConfig,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// MCP servers; the tools of those that are up join each turn's registry.
    pub mcp: crate::tools::mcp::McpManager,
}

/// A turn whose start is durable (user message stored, conversation claimed).
pub struct PreparedTurn {
    pub turn_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub conversation_id: Uuid,
    pub user_message_id: Uuid,
    pub model: String,
    pub input: Vec<ChatMessage>,
    pub allowed_tools: Vec<String>,
    /// Built-in tools plus the admin-defined ones as they were when the turn started.
    pub tools: Registry,
    /// The first model call's reservation and the output cap it leaves room for.
    pub first_call: (Hold, u32),
    /// The COMMIT of the turn's start, sent alongside the first model call; taken by it.
    pub start: Option<PendingStart>,
    /// The reservation not yet settled, for release if the turn task panics.
    pub outstanding: Arc<Mutex<Option<Hold>>>,
}

/// The uncommitted start of a turn and the connection it runs on. Dropped without a
/// successful commit, it closes that connection at once: Postgres then rolls the start back
/// and frees its row locks (the conversation, the budget period), where a connection parked in
/// the pool would hold them until the pool next looked at it.
pub struct PendingStart {
    committing: Option<Committing>,
    conn: Option<db::PooledConn>,
    /// The user message the start stores, announced once it is committed.
    message_id: Uuid,
}

impl PendingStart {
    pub fn new(conn: db::PooledConn, committing: Committing, message_id: Uuid) -> Self {
        Self {
            committing: Some(committing),
            conn: Some(conn),
            message_id,
        }
    }

    /// Commits the start (the connection goes back to the pool), then sends `turn_start`:
    /// the client never hears of a message id that is not stored.
    pub async fn commit(mut self, events: &mpsc::Sender<TurnEvent>) -> diesel::QueryResult<()> {
        if let (Some(committing), Some(conn)) = (self.committing.take(), self.conn.as_mut()) {
            committing.wait(conn).await?;
            // Healthy again: back to the pool rather than closed by `drop`.
            drop(self.conn.take());
        }
        let message_id = self.message_id;
        let _ = events.send(TurnEvent::TurnStart { message_id }).await;
        Ok(())
    }
}

impl Drop for PendingStart {
    fn drop(&mut self) {
        // The statement futures go first: nothing may look at the connection while they live.
        drop(self.committing.take());
        if let Some(conn) = self.conn.take() {
            drop(deadpool::managed::Object::take(conn));
        }
    }
}

/// What a turn produced, stored in one commit at its end.
#[derive(Default)]
struct TurnRecord {
    messages: Vec<NewMessage>,
    usage: Vec<NewUsage>,
    /// Audit rows not yet stored (flushed at the next model call and at the end).
    audit: Vec<NewAudit>,
    /// The last call's hold and its real usage, settled with the record.
    pending: Option<(Hold, i64)>,
    /// Tokens providers reported beyond what was reserved.
    overrun: u64,
}

impl TurnRecord {
    /// Accounts one model call: what it really used is recorded; the budget is charged at
    /// most the reservation (the excess is logged, the limit stays hard).
    fn account(
        &mut self,
        turn: &PreparedTurn,
        hold: Hold,
        message_id: Uuid,
        input: u64,
        output: u64,
    ) {
        let actual = clamp_i64(input.saturating_add(output));
        if hold.is_limited() && actual > hold.amount {
            self.overrun += u64::try_from(actual - hold.amount).unwrap_or(0);
            tracing::warn!(reserved = hold.amount, actual, model = %turn.model,
                "provider reported more tokens than were reserved; charging the reservation");
        }
        let charged = if hold.is_limited() {
            actual.min(hold.amount)
        } else {
            actual
        };
        if actual > 0 {
            self.usage.push(NewUsage {
                user_id: turn.user_id,
                conversation_id: Some(turn.conversation_id),
                message_id: Some(message_id),
                model: turn.model.clone(),
                input_tokens: clamp_i64(input),
                output_tokens: clamp_i64(output),
                charged,
            });
        }
        self.pending = Some((hold, actual));
    }
}

/// How one model call ended.
enum ModelOutcome {
    Completed {
        text: String,
        calls: Vec<llm::ToolCall>,
        usage: llm::Usage,
        response_model: Option<String>,
        finish_reason: llm::FinishReason,
    },
    Stopped {
        text: String,
        reason: StopReason,
    },
    Failed {
        text: String,
        error: LlmError,
    },
    /// The turn's start did not commit; the call was dropped unread.
    Unstored(diesel::result::Error),
}

/// How the whole turn ended.
enum Ending {
    Finished(FinishReason),
    Failed {
        code: String,
        message: String,
    },
    /// The start never committed: there is nothing to store or release.
    Unstored,
}

impl Agent {
    /// The tools offered to the model: registered and allowed for the user's role.
    fn offered_tools(tools: &Registry, allowed: &[String]) -> Vec<ToolSpec> {
        tools
            .allowed_specs(allowed)
            .map(|(s, _)| ToolSpec {
                name: s.name.clone(),
                description: s.description.clone(),
                parameters: s.parameters.clone(),
            })
            .collect()
    }

    /// Runs the turn to its end, sending events to `events`, then stores its messages and
    /// releases the conversation. Never panics; never runs past the turn deadline.
    pub async fn run(
        &self,
        turn: PreparedTurn,
        events: mpsc::Sender<TurnEvent>,
        control: TurnControl,
    ) {
        let deadline = {
            let control = control.clone();
            let limit = self.settings.turn_timeout;
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                control.stop(StopReason::Deadline);
            })
        };
        let client_watch = {
            let control = control.clone();
            let events = events.clone();
            tokio::spawn(async move {
                events.closed().await;
                control.stop(StopReason::ClientGone);
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
        client_watch.abort();
        deadline.abort();

        let last_assistant = record
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")
            .map(|m| m.id);
        if matches!(ending, Ending::Unstored) {
            // Unconfirmed is not always rolled back: the connection may have died with the
            // COMMIT on its way. Releasing is right either way: it only touches this turn's
            // claim, and settling a hold that is not there charges nothing.
            let outstanding = turn.outstanding.lock().ok().and_then(|mut o| o.take());
            let hold = outstanding.unwrap_or_else(|| turn.first_call.0.clone());
            self.abandon(turn.turn_id, turn.conversation_id, Some(hold))
                .await;
        } else {
            self.persist(&turn, record).await;
        }
        match ending {
            Ending::Finished(finish_reason) => {
                emit(TurnEvent::Done {
                    message_id: last_assistant,
                    finish_reason,
                })
                .await
            }
            Ending::Failed { code, message } => {
                emit(TurnEvent::Error(Box::new(ErrorEvent { code, message }))).await
            }
            Ending::Unstored => {
                emit(TurnEvent::Error(Box::new(ErrorEvent {
                    code: "unavailable".to_owned(),
                    message: "the database did not confirm your message, so it may not have \
                              been saved; reload the conversation and try again"
                        .to_owned(),
                })))
                .await
            }
        }
    }

    async fn iterate(
        &self,
        turn: &PreparedTurn,
        mut messages: Vec<ChatMessage>,
        mut start: Option<PendingStart>,
        events: &mpsc::Sender<TurnEvent>,
        control: &TurnControl,
        record: &mut TurnRecord,
    ) -> Ending {
        let mut allowed = turn.allowed_tools.clone();
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
                    .budget_for_next_call(turn, &messages, &allowed, record)
                    .await
                {
                    Ok(Some((granted, now_allowed))) => {
                        allowed = now_allowed;
                        granted
                    }
                    Ok(None) => return Ending::Finished(FinishReason::BudgetExhausted),
                    Err(e) => return e,
                }
            };
            if let Ok(mut o) = turn.outstanding.lock() {
                *o = Some(hold.clone());
            }
            let request = ChatRequest {
                model: turn.model.clone(),
                messages: messages.clone(),
                tools: Self::offered_tools(&turn.tools, &allowed),
                tool_choice: ToolChoice::Auto,
                max_tokens: Some(max_tokens),
                temperature: None,
            };
            let input_estimate: u64 = messages.iter().map(context::cost).sum();
            let started = Instant::now();
            let outcome = self
                .call_model(request, input_estimate, start.take(), events, control)
                .await;
            let elapsed = millis(started.elapsed());
            let (text, calls, usage, model) = match outcome {
                ModelOutcome::Completed {
                    text,
                    calls,
                    usage,
                    response_model,
                    ..
                } => (text, calls, usage, response_model),
                ModelOutcome::Stopped { text, reason } => {
                    // Charged for what was generated: never zero, never the whole hold.
                    let output = llm::estimate_tokens(&text);
                    let m = incomplete_assistant(turn, text, reason.status_reason(), elapsed);
                    record.account(turn, hold, m.id, input_estimate, output);
                    record.messages.push(m);
                    return Ending::Finished(FinishReason::Cancelled);
                }
                ModelOutcome::Failed { text, error } => {
                    let (input, output) = if text.is_empty() {
                        (0, 0)
                    } else {
                        (input_estimate, llm::estimate_tokens(&text))
                    };
                    let m = incomplete_assistant(turn, text, error.code(), elapsed);
                    record.account(turn, hold, m.id, input, output);
                    record.messages.push(m);
                    return Ending::Failed {
                        code: error.code().to_owned(),
                        message: error.to_string(),
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
            let stored_calls: Vec<StoredToolCall> =
                calls.iter().map(StoredToolCall::from_call).collect();
            let assistant_id = Uuid::new_v4();
            record.account(
                turn,
                hold,
                assistant_id,
                usage.input_tokens,
                usage.output_tokens,
            );
            record.messages.push(NewMessage {
                id: assistant_id,
                conversation_id: turn.conversation_id,
                role: "assistant".into(),
                content: text.clone(),
                tool_calls: (!stored_calls.is_empty())
                    .then(|| serde_json::to_value(&stored_calls).unwrap_or(Value::Null)),
                tool_call_id: None,
                status: "complete".into(),
                status_reason: None,
                model: model.or_else(|| Some(turn.model.clone())),
                input_tokens: Some(clamp_i64(usage.input_tokens)),
                output_tokens: Some(clamp_i64(usage.output_tokens)),
                duration_ms: Some(elapsed),
            });
            if calls.is_empty() {
                return Ending::Finished(FinishReason::Stop);
            }
            for c in &stored_calls {
                let _ = events
                    .send(TurnEvent::ToolCall(Box::new(ToolCallEvent {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })))
                    .await;
            }
            let results = tokio::select! {
                r = self.execute_all(&turn.tools, &ctx, &calls, &allowed) => r,
                _ = control.token.cancelled() => {
                    let reason = control.stopped().unwrap_or(StopReason::Cancelled);
                    mark_incomplete(&mut record.messages, reason.status_reason());
                    return Ending::Finished(FinishReason::Cancelled);
                }
            };
            messages.push(ChatMessage {
                role: Role::Assistant,
                content: text,
                tool_calls: calls.clone(),
                tool_call_id: None,
            });
            let mut repeated_failure = false;
            for (call, (result, ids)) in calls.iter().zip(results) {
                let _ = events.send(result_event(call, &result)).await;
                record.audit.push(audit_row(turn, call, &result, ids));
                let body = result.output.to_model_string();
                record.messages.push(NewMessage {
                    id: Uuid::new_v4(),
                    conversation_id: turn.conversation_id,
                    role: "tool".into(),
                    content: body.clone(),
                    tool_calls: None,
                    tool_call_id: Some(call.id.clone()),
                    status: "complete".into(),
                    status_reason: result.error_code.map(str::to_owned),
                    model: None,
                    input_tokens: None,
                    output_tokens: None,
                    duration_ms: Some(millis(result.duration)),
                });
                messages.push(ChatMessage {
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
            if repeated_failure {
                return Ending::Finished(FinishReason::ToolFailures);
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

    /// One model call inside a `chat {model}` client span, with its metrics.
    async fn call_model(
        &self,
        request: ChatRequest,
        input_estimate: u64,
        start: Option<PendingStart>,
        events: &mpsc::Sender<TurnEvent>,
        control: &TurnControl,
    ) -> ModelOutcome {
        let provider = self.llm.provider_name();
        let model = request.model.clone();
        let span = tracing::info_span!(
            "chat",
            otel.name = %format!("chat {model}"),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.request.model = %model,
            gen_ai.request.max_tokens = request.max_tokens,
            server.address = self.llm.server_address().unwrap_or_default(),
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let started = Instant::now();
        let first = std::sync::OnceLock::new();
        let outcome = self
            .stream_model(request, input_estimate, start, events, control, &first)
            .instrument(span.clone())
            .await;
        let m = &self.metrics;
        let labels = |outcome: &str| [provider, model.as_str(), outcome].map(str::to_owned);
        let outcome_label = match &outcome {
            ModelOutcome::Completed {
                usage,
                response_model,
                finish_reason,
                ..
            } => {
                span.record(
                    "gen_ai.response.model",
                    response_model.as_deref().unwrap_or(&model),
                );
                span.record("gen_ai.response.finish_reasons", finish_reason.as_str());
                span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                m.tokens
                    .with_label_values(&[&model, "input"])
                    .inc_by(usage.input_tokens);
                m.tokens
                    .with_label_values(&[&model, "output"])
                    .inc_by(usage.output_tokens);
                "ok"
            }
            ModelOutcome::Stopped { .. } | ModelOutcome::Unstored(_) => "cancelled",
            ModelOutcome::Failed { error, .. } => {
                span.record("error.type", error.code());
                span.record("otel.status_code", "ERROR");
                if matches!(error, LlmError::Timeout(_)) {
                    "timeout"
                } else {
                    "error"
                }
            }
        };
        let l = labels(outcome_label);
        m.model_calls
            .with_label_values(&[&l[0], &l[1], &l[2]])
            .inc();
        m.model_duration
            .with_label_values(&[provider, &model])
            .observe(started.elapsed().as_secs_f64());
        if let Some(t) = first.get() {
            m.model_ttft
                .with_label_values(&[provider, &model])
                .observe(t.duration_since(started).as_secs_f64());
        }
        outcome
    }

    /// Streams one model call, forwarding text as it arrives. Nothing from a stream that
    /// ends before the model's message is complete is executed. The first call of a turn
    /// opens while the turn's start commits, and reads nothing before the commit succeeded.
    async fn stream_model(
        &self,
        request: ChatRequest,
        input_estimate: u64,
        start: Option<PendingStart>,
        events: &mpsc::Sender<TurnEvent>,
        control: &TurnControl,
        first: &std::sync::OnceLock<Instant>,
    ) -> ModelOutcome {
        let stopped = |text: String| ModelOutcome::Stopped {
            text,
            reason: control.stopped().unwrap_or(StopReason::Cancelled),
        };
        let open = async {
            tokio::select! {
                r = self.llm.stream_chat(request) => Some(r),
                _ = control.token.cancelled() => None,
            }
        };
        let opened = match start {
            None => open.await,
            Some(start) => {
                // The commit is never cut short: a cancelled turn must still know whether
                // its start is stored before it stores the rest.
                let (committed, opened) = futures_util::join!(start.commit(events), open);
                if let Err(e) = committed {
                    return ModelOutcome::Unstored(e);
                }
                opened
            }
        };
        let Some(opened) = opened else {
            return stopped(String::new());
        };
        let mut stream = match opened {
            Ok(s) => s,
            Err(error) => {
                return ModelOutcome::Failed {
                    text: String::new(),
                    error,
                }
            }
        };
        let mut text = String::new();
        loop {
            let next = tokio::select! {
                biased;
                _ = control.token.cancelled() => return stopped(text),
                n = stream.next() => n,
            };
            let _ = first.set(Instant::now());
            match next {
                Some(Ok(StreamEvent::TextDelta(delta))) => {
                    text.push_str(&delta);
                    let _ = events.send(TurnEvent::TextDelta { text: delta }).await;
                }
                Some(Ok(StreamEvent::ToolCallStart { .. })) => {}
                Some(Ok(StreamEvent::Completed {
                    tool_calls,
                    usage,
                    response_model,
                    finish_reason,
                })) => {
                    // Providers that report no usage are charged a local count.
                    let usage = usage.unwrap_or_else(|| llm::Usage {
                        input_tokens: input_estimate,
                        output_tokens: llm::estimate_tokens(&text)
                            + tool_calls
                                .iter()
                                .map(|c| llm::estimate_tokens(&c.arguments))
                                .sum::<u64>(),
                    });
                    return ModelOutcome::Completed {
                        text,
                        calls: tool_calls,
                        usage,
                        response_model,
                        finish_reason,
                    };
                }
                Some(Err(error)) => return ModelOutcome::Failed { text, error },
                None => {
                    return ModelOutcome::Failed {
                        text,
                        error: LlmError::StreamEndedEarly,
                    }
                }
            }
        }
    }

    /// Runs the calls concurrently; results come back in call order. A tool the user's role
    /// does not allow is refused here even if the model names it without being offered it.
    async fn execute_all(
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
                let result = if known && !crate::tools::policy::allows(allowed, &call.name) {
                    refused(&call.name)
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
                self.metrics
                    .tool_calls
                    .with_label_values(&[&call.name, result.outcome.as_str()])
                    .inc();
                self.metrics
                    .tool_duration
                    .with_label_values(&[&call.name])
                    .observe(result.duration.as_secs_f64());
                (result, ids)
            }
            .instrument(span)
        });
        futures_util::future::join_all(runs).await
    }

    /// Settles the previous call and reserves the next one. `Ok(None)`: the budget is spent.
    async fn budget_for_next_call(
        &self,
        turn: &PreparedTurn,
        messages: &[ChatMessage],
        allowed: &[String],
        record: &mut TurnRecord,
    ) -> Result<Option<((Hold, u32), Vec<String>)>, Ending> {
        let estimate = self.estimate_input(messages, allowed, &turn.tools);
        let max_output = i64::from(self.settings.max_output_tokens);
        let step = turn::Step {
            settle: record.pending.clone(),
            audit: record.audit.clone(),
            want: estimate + max_output,
            need: estimate + max_output.min(crate::budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
        };
        let reserved = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn::next_call(&mut conn, turn.user_id, step)
                .await
                .map_err(anyhow::Error::from)
        }
        .await;
        let next = match reserved {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "reserving budget failed");
                return Err(unavailable());
            }
        };
        // Committed: the settlement and the audit rows are stored, whatever the reservation.
        record.pending = None;
        record.audit.clear();
        match next.reserve {
            Ok(Reserve::Granted(hold)) => {
                let cap = super::clamp_output(hold.amount - estimate, max_output);
                Ok(Some(((hold, cap), next.allowed_tools)))
            }
            Ok(_) => {
                self.metrics.budget_refusals.inc();
                Ok(None)
            }
            Err(e) => {
                tracing::error!(error = %e, "reserving budget failed after the step was stored");
                Err(unavailable())
            }
        }
    }

    /// Stores the turn (messages, usage, the last settlement) and releases the conversation;
    /// retried briefly because losing a finished turn is worse than a slow answer.
    async fn persist(&self, turn: &PreparedTurn, record: TurnRecord) {
        for attempt in 0..3u32 {
            let result = async {
                let mut conn = db::conn_patiently(&self.pool, STORE_WAIT)
                    .await
                    .map_err(|e| anyhow::anyhow!("no database connection: {e}"))?;
                turn::finish(
                    &mut conn,
                    turn.conversation_id,
                    turn.turn_id,
                    record.messages.clone(),
                    record.usage.clone(),
                    record.audit.clone(),
                    record.pending.clone(),
                )
                .await
                .map_err(anyhow::Error::from)
            }
            .await;
            match result {
                Ok(()) => {
                    if let Ok(mut o) = turn.outstanding.lock() {
                        *o = None;
                    }
                    return;
                }
                Err(e) => {
                    tracing::error!(attempt, error = %e, conversation = %turn.conversation_id,
                        "storing the turn failed");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt + 1))).await;
                }
            }
        }
    }

    /// Cleans up after a turn task panicked or its start went unconfirmed: releases its hold
    /// and the conversation.
    pub async fn abandon(&self, turn_id: Uuid, conversation_id: Uuid, outstanding: Option<Hold>) {
        let result = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn::abandon(&mut conn, conversation_id, turn_id, outstanding)
                .await
                .map_err(anyhow::Error::from)
        }
        .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "releasing an unfinished turn failed; its claim and hold expire by themselves");
        }
    }
}

fn refused(name: &str) -> ExecutedCall {
    ExecutedCall {
        output: ToolOutput::err(format!(
            "not_permitted: the tool `{name}` is not available to this user"
        )),
        outcome: Outcome::Refused,
        error_code: Some("not_permitted"),
        duration: Duration::ZERO,
        result_bytes: 0,
        truncated: false,
    }
}

/// OpenTelemetry trace and span id of a tool call's span (when exporting).
type TraceIds = (Option<String>, Option<String>);

fn audit_row(
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
    }
}

fn result_event(call: &llm::ToolCall, r: &ExecutedCall) -> TurnEvent {
    TurnEvent::ToolResult(Box::new(ToolResultEvent {
        id: call.id.clone(),
        name: call.name.clone(),
        success: r.output.success,
        data: r.output.data.clone(),
        error: r.output.error.clone(),
        duration_ms: r.duration.as_millis().try_into().unwrap_or(u64::MAX),
    }))
}

fn incomplete_assistant(
    turn: &PreparedTurn,
    text: String,
    reason: &str,
    elapsed: i64,
) -> NewMessage {
    let output = llm::estimate_tokens(&text);
    NewMessage {
        id: Uuid::new_v4(),
        conversation_id: turn.conversation_id,
        role: "assistant".into(),
        content: text,
        tool_calls: None,
        tool_call_id: None,
        status: "incomplete".into(),
        status_reason: Some(reason.to_owned()),
        model: Some(turn.model.clone()),
        input_tokens: None,
        output_tokens: Some(clamp_i64(output)),
        duration_ms: Some(elapsed),
    }
}

/// Marks the last assistant message incomplete (its tool calls never got results).
fn mark_incomplete(produced: &mut [NewMessage], reason: &str) {
    if let Some(m) = produced.iter_mut().rev().find(|m| m.role == "assistant") {
        m.status = "incomplete".into();
        m.status_reason = Some(reason.to_owned());
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn clamp_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The turn stops because the database failed it.
fn unavailable() -> Ending {
    Ending::Failed {
        code: "unavailable".into(),
        message: "the database is unavailable; the turn was stopped".into(),
    }
}
