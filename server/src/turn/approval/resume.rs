//! Running a paused turn on, once every call of its step is decided, on whichever process
//! took the last decision (or noticed the expiry). The decided calls run with the arguments
//! stored with their approvals, checked against the role's allowlist as it is now; denied and
//! expired ones become tool errors naming who decided and why. Their results are stored with
//! the next model call's reservation (as between any two steps), and the turn goes on as usual.

use uuid::Uuid;

use crate::cluster::control::TurnControl;
use crate::db;
use crate::db::models::audit::ApprovalAudit;
use crate::db::models::budget::{Hold, Reserve};
use crate::db::models::message::{self, Message, NewMessage};
use crate::db::models::{conversation, custom_tool, role, user};
use crate::domain::{ApprovalState, MessageRole, MessageStatus};
use crate::llm;
use crate::tools::ToolContext;
use crate::turn::approval::sql::{Approval, Claimant, Resume};
use crate::turn::context::{self, StoredToolCall};
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::events::{ErrorEvent, FinishReason, TurnEvent};
use crate::turn::record::millis;
use crate::turn::sql as turn_db;
use crate::turn::sql::RoleNow;
use crate::turn::tool_calls::{audit_row, result_event};
use crate::turn::turn_log::EventSink;

impl TurnEngine {
    /// Who may claim a conversation for a resumed turn: this process.
    pub(crate) fn claimant(&self) -> Claimant {
        Claimant {
            process_id: self.process_id,
            stale_after: self.hold_ttl(),
        }
    }

    pub(in crate::turn) async fn run_resumed(
        &self,
        resume: Resume,
        events: EventSink,
        control: TurnControl,
    ) {
        let cancelled = TurnEvent::Done {
            message_id: None,
            finish_reason: FinishReason::Cancelled,
        };
        let (mut turn, history, system) = match self.load_resumed(&resume, &events).await {
            Ok(Some(loaded)) => loaded,
            Ok(None) => {
                // The account is gone or disabled: nothing runs; the claim is let go.
                self.release_resumed(&resume, Vec::new(), Vec::new(), cancelled, &events)
                    .await;
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "loading a resumed turn failed");
                self.release_resumed(&resume, Vec::new(), Vec::new(), unavailable(), &events)
                    .await;
                return;
            }
        };
        events.push(TurnEvent::TurnStart {
            message_id: turn.user_message_id,
        });
        let ctx = ToolContext {
            user_id: turn.user_id,
            username: turn.username.clone(),
            conversation_id: turn.conversation_id,
        };
        let order: Vec<String> = history
            .iter()
            .find(|m| m.id == resume.message_id)
            .and_then(|m| m.tool_calls.clone())
            .and_then(|v| serde_json::from_value::<Vec<StoredToolCall>>(v).ok())
            .map(|calls| calls.into_iter().map(|c| c.id).collect())
            .unwrap_or_default();
        let mut decided: Vec<&Approval> = resume.calls.iter().collect();
        decided.sort_by_key(|a| order.iter().position(|id| *id == a.tool_call_id));
        let calls: Vec<(llm::ToolCall, &Approval)> = decided
            .into_iter()
            .map(|a| {
                let call = llm::ToolCall {
                    id: a.tool_call_id.clone(),
                    name: a.tool.clone(),
                    arguments: a.arguments.to_string(),
                };
                (call, a)
            })
            .collect();
        let approved: Vec<llm::ToolCall> = calls
            .iter()
            .filter(|(_, a)| a.state == ApprovalState::Approved)
            .map(|(c, _)| c.clone())
            .collect();
        let ran = tokio::select! {
            r = self.execute_all(&turn.tools, &ctx, &approved, &turn.role.tools) => r,
            _ = control.token.cancelled() => {
                self.release_resumed(&resume, Vec::new(), Vec::new(), cancelled, &events).await;
                return;
            }
        };
        let mut ran = ran.into_iter();
        let mut results = Vec::new();
        let mut audit = Vec::new();
        for (call, a) in &calls {
            let (result, ids) = if a.state == ApprovalState::Approved {
                match ran.next() {
                    Some(r) => r,
                    None => (crate::turn::approval::pause::not_decided(a), (None, None)),
                }
            } else {
                (crate::turn::approval::pause::not_decided(a), (None, None))
            };
            events.push(result_event(call, &result));
            let mut row = audit_row(&turn, call, &result, ids);
            row.approval = Some(ApprovalAudit {
                policy: a.approver,
                decision: a.state,
                decided_by: a.decided_by_name.clone(),
                note: a.note.clone(),
                decided_at: a.decided_at,
            });
            audit.push(row);
            results.push(NewMessage {
                id: Uuid::new_v4(),
                conversation_id: turn.conversation_id,
                role: MessageRole::Tool,
                content: result.output.to_model_string(),
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
        }
        let mut history = history;
        history.extend(results.iter().map(as_stored));
        let (window, max_output) = self.limits_of(&turn.model);
        turn.input = context::assemble_resumed(&system, &history, window, u64::from(max_output));
        let estimate = self.estimate_input(&turn.input, &turn.role.tools, &turn.tools);
        let max_output = i64::from(max_output);
        let step = turn_db::Step {
            settle: None,
            messages: results.clone(),
            usage: Vec::new(),
            audit: audit.clone(),
            input: estimate,
            price: turn.price.clone(),
            want: estimate + max_output,
            need: estimate + max_output.min(crate::budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
            process_id: self.process_id,
            turn_id: turn.turn_id,
        };
        let next = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn_db::next_call(&mut conn, turn.user_id, step)
                .await
                .map_err(anyhow::Error::from)
        }
        .await;
        let next = match next {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "storing the decided calls failed");
                self.release_resumed(&resume, results, audit, unavailable(), &events)
                    .await;
                return;
            }
        };
        // The decided calls' results are stored: the paused step is whole in Postgres.
        events.committed();
        self.announce(&events);
        match next.reserve {
            Ok(Reserve::Granted(hold)) => {
                let cap = crate::turn::limits::clamp_output(hold.output_room(estimate), max_output);
                if let Ok(mut o) = turn.outstanding.lock() {
                    *o = Some(hold.clone());
                }
                turn.first_call = (hold, cap);
                turn.role = next.role;
            }
            refused => {
                if let Err(e) = &refused {
                    tracing::error!(error = %e, "reserving budget for a resumed turn failed");
                }
                self.metrics.budget_refusals.inc();
                let exhausted = TurnEvent::Done {
                    message_id: None,
                    finish_reason: FinishReason::BudgetExhausted,
                };
                self.release_resumed(&resume, Vec::new(), Vec::new(), exhausted, &events)
                    .await;
                return;
            }
        }
        // The loop announces the turn again (the same `turn_start`) and numbers its model
        // calls after the paused step.
        self.run(turn, events, control).await;
    }

    /// The resumed turn as the loop takes it (its first call's budget still to reserve), the
    /// conversation's history and its opening (system prompt, memory notes). `None`: the
    /// account is gone or disabled.
    async fn load_resumed(
        &self,
        resume: &Resume,
        events: &EventSink,
    ) -> anyhow::Result<Option<(PreparedTurn, Vec<Message>, context::Opening)>> {
        let mut conn = db::conn(&self.pool)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(account) = user::auth_state(&mut conn, resume.user_id).await? else {
            return Ok(None);
        };
        if account.disabled {
            return Ok(None);
        }
        let role_now = role::find(&mut conn, &account.role)
            .await?
            .map(|r| RoleNow {
                approvals: crate::tools::approval::from_json(&r.approvals),
                tools: r.tools,
                models: r.models,
                name: r.name,
            })
            .unwrap_or_default();
        let conversation =
            conversation::find_owned(&mut conn, resume.conversation_id, resume.user_id).await?;
        let custom = custom_tool::list(&mut conn).await?;
        let key_scopes = conversation::key_scopes(&mut conn, resume.conversation_id).await?;
        // Memory is for chats, not a key's `/v1` calls (as at the turn's start).
        let mut preset = crate::turn::sql::preset::read(
            &mut conn,
            resume.conversation_id,
            resume.user_id,
            None,
            key_scopes.is_none(),
        )
        .await?;
        if let Some(a) = preset.assistant.as_mut().filter(|a| !a.usable) {
            // Retired (or hidden from the role) while the turn waited: nothing more runs.
            a.tools.clear();
        }
        let model = preset
            .assistant
            .as_ref()
            .and_then(|a| a.model.clone())
            .or_else(|| conversation.as_ref().and_then(|c| c.model.clone()))
            .unwrap_or_else(|| self.catalogue.now().default_model().to_owned());
        let (window, max_output) = self.limits_of(&model);
        let room = context::history_room(
            &self.settings.system_prompt,
            "",
            window,
            u64::from(max_output),
        );
        let history = message::list_recent(&mut conn, resume.conversation_id, room).await?;
        // The turn goes on in the step that paused: its ids continue the stored ones.
        let stored = crate::turn::replay::load(
            &mut conn,
            resume.user_id,
            resume.conversation_id,
            resume.turn_id,
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("the paused turn's message is gone"))?;
        let (step, text_len, calls, results) = stored.paused_step();
        events.resume_at(step, text_len, calls, results);
        let user_message_id = resume.turn_id;
        let system = context::opening_with(
            &self.settings.system_prompt,
            &preset,
            conversation
                .as_ref()
                .and_then(|c| c.system_prompt.as_deref()),
        );
        let wants_title = conversation.as_ref().is_some_and(|c| c.title_auto);
        let placeholder = Hold {
            id: Uuid::nil(),
            user_id: resume.user_id,
            period: crate::budget::Period::Total,
            period_start: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            amount: 0,
            money: None,
        };
        let price = self
            .catalogue
            .now()
            .get(&model)
            .and_then(|m| m.price_at(chrono::Utc::now()));
        let turn = PreparedTurn {
            turn_id: resume.turn_id,
            user_id: resume.user_id,
            username: account.username,
            conversation_id: resume.conversation_id,
            user_message_id,
            model,
            price,
            input: Vec::new(),
            role: role_now.narrowed(preset.assistant.as_ref()),
            tools: crate::turn::api::within_scopes(self.registry_with(&custom), key_scopes),
            first_call: (placeholder, 0),
            start: None,
            outstanding: Default::default(),
            client_tools: Vec::new(),
            wants_title,
            assistant: preset.assistant.map(std::sync::Arc::new),
        };
        Ok(Some((turn, history, system)))
    }

    /// Ends a resumed turn that cannot go on: stores what it has and its final event, lets
    /// the claim go, then gives the event to its followers.
    async fn release_resumed(
        &self,
        resume: &Resume,
        results: Vec<NewMessage>,
        audit: Vec<crate::db::models::audit::NewAudit>,
        end: TurnEvent,
        events: &EventSink,
    ) {
        let finish = turn_db::Finish {
            conversation_id: resume.conversation_id,
            turn_id: resume.turn_id,
            rows: results,
            usage_rows: Vec::new(),
            audit_rows: audit,
            settle: None,
            end: serde_json::to_value(&end).unwrap_or(serde_json::Value::Null),
        };
        let released = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn_db::finish(&mut conn, finish)
                .await
                .map_err(anyhow::Error::from)
        }
        .await;
        if let Err(e) = released {
            tracing::error!(error = %e, "releasing a resumed turn failed; its claim expires by itself");
        }
        events.push(end);
        self.announce(events);
    }
}

/// A result about to be stored, as the history holds it.
fn as_stored(m: &NewMessage) -> Message {
    Message {
        id: m.id,
        seq: 0,
        conversation_id: m.conversation_id,
        role: m.role,
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        attachments: m.attachments.clone(),
        citations: m.citations.clone(),
        status: m.status,
        status_reason: m.status_reason.clone(),
        model: m.model.clone(),
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
        duration_ms: m.duration_ms,
        created_at: chrono::Utc::now(),
    }
}

fn unavailable() -> TurnEvent {
    TurnEvent::Error(Box::new(ErrorEvent {
        code: "unavailable".into(),
        message: "the database is unavailable, so the approved calls could not go on; \
                  try again shortly"
            .into(),
    }))
}
