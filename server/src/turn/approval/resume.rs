//! Running a paused turn on, once every call of its step is decided, on whichever process
//! took the last decision (or noticed the expiry). The decided calls run with the arguments
//! stored with their approvals, checked against the role's allowlist as it is now; denied and
//! expired ones become tool errors naming who decided and why. Their results are stored with
//! the next model call's reservation (as between any two steps), and the turn goes on as usual.

use uuid::Uuid;

use crate::cluster::control::TurnControl;
use crate::db;
use crate::db::models::audit::ApprovalAudit;
use crate::db::models::budget::Hold;
use crate::db::models::conversation;
use crate::db::models::message::{Message, NewMessage};
use crate::domain::ApprovalState;
use crate::llm;
use crate::turn::approval::sql::Approval;
use crate::turn::approval::sql_step::Resume;
use crate::turn::context::{self, StoredToolCall};
use crate::turn::engine::{PreparedTurn, TurnEngine, Who};
use crate::turn::events::{ErrorEvent, FinishReason, TurnEvent};
use crate::turn::plan::{limits_of, within_scopes, Plan};
use crate::turn::sql as turn_db;
use crate::turn::step::commit::TurnRecord;
use crate::turn::step::tools::{audit_row, result_event, result_row};
use crate::turn::step::Step;
use crate::turn::turn_log::EventSink;

/// Runs the decided calls of a paused step, stores their results with the next call's
/// reservation (the step's own commit), and hands the turn to the loop.
pub(in crate::turn) async fn run(
    engine: &TurnEngine,
    resume: Resume,
    events: EventSink,
    control: TurnControl,
) {
    let cancelled = TurnEvent::Done {
        message_id: None,
        finish_reason: FinishReason::Cancelled,
    };
    let (mut turn, history, system) = match load(engine, &resume, &events).await {
        Ok(Some(loaded)) => loaded,
        Ok(None) => {
            // The account is gone or disabled: nothing runs; the claim is let go.
            release(engine, &resume, TurnRecord::default(), cancelled, &events).await;
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "loading a resumed turn failed");
            release(
                engine,
                &resume,
                TurnRecord::default(),
                unavailable(),
                &events,
            )
            .await;
            return;
        }
    };
    events.push(TurnEvent::TurnStart {
        message_id: turn.who.user_message_id,
    });
    let step = Step::new(engine, &turn.who, &events, &control);
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
        r = step.execute_all(&turn.plan, &approved) => r,
        _ = control.token.cancelled() => {
            release(engine, &resume, TurnRecord::default(), cancelled, &events).await;
            return;
        }
    };
    let mut ran = ran.into_iter();
    let mut record = TurnRecord::default();
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
        let mut row = audit_row(&turn.who, call, &result, ids);
        row.approval = Some(ApprovalAudit {
            policy: a.approver,
            decision: a.state,
            decided_by: a.decided_by_name.clone(),
            note: a.note.clone(),
            decided_at: a.decided_at,
        });
        record.audit.push(row);
        record.messages.push(result_row(&turn.who, call, &result));
    }
    let mut history = history;
    history.extend(record.messages.iter().map(as_stored));
    let (window, max_output) =
        limits_of(&engine.catalogue.now(), &engine.settings, &turn.plan.model);
    // The turn's own images and earlier ones, for a model that sees, as at its start.
    let seeing = engine.catalogue.now().get(&turn.plan.model).cloned();
    let earlier = match seeing {
        Some(model) => {
            crate::turn::history_images::read(
                &engine.workspaces,
                turn.who.user_id,
                &model,
                &history,
                0,
            )
            .await
        }
        None => Default::default(),
    };
    turn.input =
        context::assemble_resumed(&system, &history, &earlier, window, u64::from(max_output));
    // The decided calls' results are stored as any step's are: the paused step is whole in
    // Postgres once this commits.
    let next = step.commit(&turn.plan, &turn.input, &mut record).await;
    drop(step);
    let committed = record.messages.is_empty();
    match next {
        Ok(Some(granted)) => {
            if let Ok(mut o) = turn.who.outstanding.lock() {
                *o = Some(granted.call.0.clone());
            }
            turn.first_call = granted.call;
            turn.plan.renarrow(granted.role);
        }
        Err(_) if !committed => {
            release(engine, &resume, record, unavailable(), &events).await;
            return;
        }
        refused => {
            if refused.is_err() {
                // Stored, but the reservation failed (a refusal is counted by the commit).
                engine.metrics.budget_refusals.inc();
            }
            let exhausted = TurnEvent::Done {
                message_id: None,
                finish_reason: FinishReason::BudgetExhausted,
            };
            release(engine, &resume, TurnRecord::default(), exhausted, &events).await;
            return;
        }
    }
    // The loop announces the turn again (the same `turn_start`) and numbers its model
    // calls after the paused step.
    crate::turn::run::run(engine, turn, events, control).await;
}

/// The resumed turn as the loop takes it (its first call's budget still to reserve), the
/// conversation's history and its opening (system prompt, memory notes). `None`: the
/// account is gone or disabled.
async fn load(
    engine: &TurnEngine,
    resume: &Resume,
    events: &EventSink,
) -> anyhow::Result<Option<(PreparedTurn, Vec<Message>, context::Opening)>> {
    let mut conn = db::conn(&engine.pool)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let key_scopes = conversation::key_scopes(&mut conn, resume.conversation_id).await?;
    // The account, its role, the custom tools, the assistant and the memory notes, as a
    // start reads them; memory is for chats, not a key's `/v1` calls (as at the start).
    let Some(inputs) = turn_db::inputs::read_for_resume(
        &mut conn,
        resume.conversation_id,
        resume.user_id,
        key_scopes.is_none(),
    )
    .await?
    else {
        return Ok(None);
    };
    let turn_db::inputs::ResumeInputs {
        account,
        role: role_now,
        mut preset,
        custom_tools: custom,
    } = inputs;
    if account.disabled {
        return Ok(None);
    }
    let conversation =
        conversation::find_owned(&mut conn, resume.conversation_id, resume.user_id).await?;
    if let Some(a) = preset.assistant.as_mut().filter(|a| !a.usable) {
        // Retired (or hidden from the role) while the turn waited: nothing more runs.
        a.tools.clear();
    }
    let model = preset
        .assistant
        .as_ref()
        .and_then(|a| a.model.clone())
        .or_else(|| conversation.as_ref().and_then(|c| c.model.clone()))
        .unwrap_or_else(|| engine.catalogue.now().default_model().to_owned());
    let catalogue = engine.catalogue.now();
    let (window, max_output) = limits_of(&catalogue, &engine.settings, &model);
    let room = context::history_room(
        &engine.settings.system_prompt,
        "",
        window,
        u64::from(max_output),
    );
    let history =
        crate::db::models::message_recent::list_recent(&mut conn, resume.conversation_id, room)
            .await?
            .messages;
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
        &engine.settings.system_prompt,
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
    let assistant = preset.assistant.map(std::sync::Arc::new);
    let plan = Plan::new(
        model,
        role_now.narrowed(assistant.as_deref()),
        within_scopes(engine.registry_with(&custom), key_scopes),
        assistant,
    );
    let turn = PreparedTurn {
        who: Who {
            turn_id: resume.turn_id,
            user_id: resume.user_id,
            username: account.username,
            conversation_id: resume.conversation_id,
            user_message_id,
            outstanding: Default::default(),
        },
        plan,
        input: Vec::new(),
        first_call: (placeholder, 0),
        start: None,
        wants_title,
    };
    Ok(Some((turn, history, system)))
}

/// Ends a resumed turn that cannot go on: stores what it has (the decided calls' results
/// and audit rows in `record`) and its final event, lets the claim go, then gives the
/// event to its followers.
async fn release(
    engine: &TurnEngine,
    resume: &Resume,
    record: TurnRecord,
    end: TurnEvent,
    events: &EventSink,
) {
    let finish = turn_db::Finish {
        conversation_id: resume.conversation_id,
        turn_id: resume.turn_id,
        rows: record.messages,
        usage_rows: Vec::new(),
        audit_rows: record.audit,
        settle: None,
        end: serde_json::to_value(&end).unwrap_or(serde_json::Value::Null),
    };
    let released = async {
        let mut conn = db::conn(&engine.pool)
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
    engine.announce(events);
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
