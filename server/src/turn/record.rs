//! What a turn produced and has not stored yet, and how a model call is charged.

use std::time::Duration;

use uuid::Uuid;

use crate::db::models::audit::NewAudit;
use crate::db::models::budget::{Hold, Spend};
use crate::db::models::message::NewMessage;
use crate::db::models::usage::NewUsage;
use crate::domain::{MessageRole, MessageStatus};
use crate::llm;
use crate::turn::engine::PreparedTurn;
use crate::turn::fallback::Answered;

/// What a turn produced, stored in one commit at its end.
#[derive(Default)]
pub(super) struct TurnRecord {
    pub(super) messages: Vec<NewMessage>,
    pub(super) usage: Vec<NewUsage>,
    /// Audit rows not yet stored (flushed at the next model call and at the end).
    pub(super) audit: Vec<NewAudit>,
    /// The last call's hold and its real usage, settled with the record.
    pub(super) pending: Option<(Hold, Spend)>,
    /// The turn's latest assistant message, stored or not (what `done` names).
    pub(super) last_assistant: Option<Uuid>,
    /// Tokens providers reported beyond what was reserved.
    pub(super) overrun: u64,
}

impl TurnRecord {
    /// Accounts one model call: what it really used is recorded; the budget is charged at
    /// most the reservation (the excess is logged, the limit stays hard).
    pub(super) fn account(
        &mut self,
        turn: &PreparedTurn,
        hold: Hold,
        message_id: Uuid,
        usage: llm::Usage,
        answered: &Answered,
    ) {
        let (input, output) = (usage.input_tokens, usage.output_tokens);
        let actual = clamp_i64(input.saturating_add(output));
        if hold.is_limited() && actual > hold.amount {
            self.overrun += u64::try_from(actual - hold.amount).unwrap_or(0);
            tracing::warn!(reserved = hold.amount, actual, model = %answered.model,
                "provider reported more tokens than were reserved; charging the reservation");
        }
        let charged = if hold.is_limited() {
            actual.min(hold.amount)
        } else {
            actual
        };
        let cost = answered
            .price
            .as_ref()
            .map(|p| (p.cost(&usage.counts()), p.currency.clone()));
        if let (Some(money), Some((cost, _))) = (&hold.money, &cost) {
            if *cost > money.amount {
                tracing::warn!(reserved = %money.amount, %cost, model = %answered.model,
                    "the call cost more than was reserved; charging the reservation");
            }
        }
        let spend = Spend {
            tokens: actual,
            cost: cost.as_ref().map_or(rust_decimal::Decimal::ZERO, |c| c.0),
        };
        if actual > 0 {
            self.usage.push(NewUsage {
                user_id: turn.user_id,
                conversation_id: Some(turn.conversation_id),
                message_id: Some(message_id),
                model: answered.model.clone(),
                fallback_from: answered.fallback.as_ref().map(|f| f.0.clone()),
                fallback_reason: answered.fallback.as_ref().map(|f| f.1.clone()),
                input_tokens: clamp_i64(input),
                output_tokens: clamp_i64(output),
                cache_read_tokens: clamp_i64(usage.cache_read_tokens),
                cache_write_tokens: clamp_i64(usage.cache_write_tokens),
                charged,
                cost,
            });
        }
        self.pending = Some((hold, spend));
    }
}
/// An assistant message cut short (stopped or failed), by the model that was answering.
pub(super) fn incomplete_assistant(
    turn: &PreparedTurn,
    answered: &Answered,
    text: String,
    reason: &str,
    elapsed: i64,
) -> NewMessage {
    let output = llm::estimate_tokens(&text);
    NewMessage {
        id: Uuid::new_v4(),
        conversation_id: turn.conversation_id,
        role: MessageRole::Assistant,
        content: text,
        tool_calls: None,
        tool_call_id: None,
        attachments: None,
        citations: None,
        status: MessageStatus::Incomplete,
        status_reason: Some(reason.to_owned()),
        model: Some(answered.model.clone()),
        input_tokens: None,
        output_tokens: Some(clamp_i64(output)),
        duration_ms: Some(elapsed),
    }
}

/// Marks the last assistant message incomplete (its tool calls never got results).
pub(super) fn mark_incomplete(produced: &mut [NewMessage], reason: &str) {
    if let Some(m) = produced
        .iter_mut()
        .rev()
        .find(|m| m.role == MessageRole::Assistant)
    {
        m.status = MessageStatus::Incomplete;
        m.status_reason = Some(reason.to_owned());
    }
}

pub(super) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(super) fn clamp_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
