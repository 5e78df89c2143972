//! The pieces of a resumed turn ([`super::resume`]): loading it, running its decided calls,
//! and letting it go when it cannot go on.

use std::time::Duration;

use tokio::sync::mpsc;
use uuid::Uuid;

use super::context::{self, StoredToolCall};
use super::control::TurnControl;
use super::events::{ErrorEvent, TurnEvent};
use super::record::millis;
use super::tool_calls::{audit_row, result_event};
use super::turn::{Agent, PreparedTurn};
use crate::db::models::approval::{Approval, Resume};
use crate::db::models::audit::{ApprovalAudit, NewAudit};
use crate::db::models::budget::Hold;
use crate::db::models::message::{self, Message, NewMessage};
use crate::db::models::{conversation, custom_tool, role, turn as turn_db, user};
use crate::db::{self, pg_safe_text};
use crate::llm;
use crate::tools::{ExecutedCall, Outcome, ToolContext, ToolOutput};

impl Agent {
    /// Runs the step's approved calls with their stored arguments (under the role's allowlist
    /// as it is now) and turns denied and expired ones into tool errors; sends a
    /// `tool_result` for each. `None`: the turn was cancelled meanwhile.
    pub(super) async fn run_decided(
        &self,
        turn: &PreparedTurn,
        resume: &Resume,
        history: &[Message],
        events: &mpsc::Sender<TurnEvent>,
        control: &TurnControl,
    ) -> Option<(Vec<NewMessage>, Vec<NewAudit>)> {
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
            .filter(|(_, a)| a.state == "approved")
            .map(|(c, _)| c.clone())
            .collect();
        let ran = tokio::select! {
            r = self.execute_all(&turn.tools, &ctx, &approved, &turn.allowed_tools) => r,
            _ = control.token.cancelled() => return None,
        };
        let mut ran = ran.into_iter();
        let mut results = Vec::new();
        let mut audit = Vec::new();
        for (call, a) in &calls {
            let (result, ids) = if a.state == "approved" {
                match ran.next() {
                    Some(r) => r,
                    None => (not_decided(a), (None, None)),
                }
            } else {
                (not_decided(a), (None, None))
            };
            let _ = events.send(result_event(call, &result)).await;
            let mut row = audit_row(turn, call, &result, ids);
            row.approval = Some(ApprovalAudit {
                policy: a.approver.clone(),
                decision: a.state.clone(),
                decided_by: a.decided_by_name.clone(),
                note: a.note.clone(),
                decided_at: a.decided_at,
            });
            audit.push(row);
            results.push(NewMessage {
                id: Uuid::new_v4(),
                conversation_id: turn.conversation_id,
                role: "tool".into(),
                content: result.output.to_model_string(),
                tool_calls: None,
                tool_call_id: Some(call.id.clone()),
                status: "complete".into(),
                status_reason: result.error_code.map(str::to_owned),
                model: None,
                input_tokens: None,
                output_tokens: None,
                duration_ms: Some(millis(result.duration)),
            });
        }
        Some((results, audit))
    }

    /// The resumed turn as the loop takes it (its first call's budget still to reserve) and
    /// the conversation's history. `None`: the account is gone or disabled.
    pub(super) async fn load_resumed(
        &self,
        resume: &Resume,
    ) -> anyhow::Result<Option<(PreparedTurn, Vec<Message>)>> {
        let mut conn = db::conn(&self.pool)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(account) = user::auth_state(&mut conn, resume.user_id).await? else {
            return Ok(None);
        };
        if account.disabled {
            return Ok(None);
        }
        let allowed = role::find(&mut conn, &account.role)
            .await?
            .map(|r| r.tools)
            .unwrap_or_default();
        let conversation =
            conversation::find_owned(&mut conn, resume.conversation_id, resume.user_id).await?;
        let custom = custom_tool::list(&mut conn).await?;
        let room = context::history_room(
            &self.settings.system_prompt,
            "",
            self.settings.context_window_tokens,
            u64::from(self.settings.max_output_tokens),
        );
        let history = message::list_recent(&mut conn, resume.conversation_id, room).await?;
        let user_message_id = history
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map_or(Uuid::nil(), |m| m.id);
        let model = conversation
            .and_then(|c| c.model)
            .filter(|m| self.settings.models.contains(m))
            .unwrap_or_else(|| self.settings.model.clone());
        let placeholder = Hold {
            id: Uuid::nil(),
            user_id: resume.user_id,
            period: crate::budget::Period::Total,
            period_start: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            amount: 0,
        };
        let turn = PreparedTurn {
            turn_id: resume.turn_id,
            user_id: resume.user_id,
            username: account.username,
            conversation_id: resume.conversation_id,
            user_message_id,
            model,
            input: Vec::new(),
            allowed_tools: allowed,
            tools: self.registry_with(&custom),
            first_call: (placeholder, 0),
            start: None,
            outstanding: Default::default(),
            client_tools: Vec::new(),
        };
        Ok(Some((turn, history)))
    }

    /// Ends a resumed turn that cannot go on: stores what it has and lets the claim go.
    pub(super) async fn release_resumed(
        &self,
        resume: &Resume,
        results: Vec<NewMessage>,
        audit: Vec<crate::db::models::audit::NewAudit>,
    ) {
        let released = async {
            let mut conn = db::conn(&self.pool)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            turn_db::finish(
                &mut conn,
                resume.conversation_id,
                resume.turn_id,
                results,
                Vec::new(),
                audit,
                None,
            )
            .await
            .map_err(anyhow::Error::from)
        }
        .await;
        if let Err(e) = released {
            tracing::error!(error = %e, "releasing a resumed turn failed; its claim expires by itself");
        }
    }
}

/// The tool error the model gets for a call that was denied or expired.
pub(super) fn not_decided(a: &Approval) -> ExecutedCall {
    let (code, message) = if a.state == "expired" {
        (
            "approval_expired",
            format!(
                "approval_expired: nobody approved this call of `{}` in time, so it did not run",
                a.tool
            ),
        )
    } else {
        let who = a.decided_by_name.as_deref().unwrap_or("someone");
        let why = a
            .note
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .map(|n| format!(": {}", pg_safe_text(n)))
            .unwrap_or_else(|| " (no reason given)".to_owned());
        (
            "approval_denied",
            format!(
                "approval_denied: {who} denied this call of `{}`{why}; it did not run",
                a.tool
            ),
        )
    };
    ExecutedCall {
        output: ToolOutput::err(message),
        outcome: Outcome::Refused,
        error_code: Some(code),
        duration: Duration::ZERO,
        result_bytes: 0,
        truncated: false,
    }
}

/// A result about to be stored, as the history holds it.
pub(super) fn as_stored(m: &NewMessage) -> Message {
    Message {
        id: m.id,
        seq: 0,
        conversation_id: m.conversation_id,
        role: m.role.clone(),
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        status: m.status.clone(),
        status_reason: m.status_reason.clone(),
        model: m.model.clone(),
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
        duration_ms: m.duration_ms,
        created_at: chrono::Utc::now(),
    }
}

pub(super) fn unavailable() -> TurnEvent {
    TurnEvent::Error(Box::new(ErrorEvent {
        code: "unavailable".into(),
        message: "the database is unavailable, so the approved calls could not go on; \
                  try again shortly"
            .into(),
    }))
}
