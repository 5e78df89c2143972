//! A step's commit: what the turn produced and has not stored yet, how a model call is
//! charged, the commit that stores a finished step with the settlement of its call and the
//! reservation of the next ([`Step::commit`]), and how the whole turn ended.

use std::time::Duration;

use uuid::Uuid;

use crate::db;
use crate::db::conflict::{Retry, Transaction};
use crate::db::models::audit::NewAudit;
use crate::db::models::budget::{Hold, HoldTurn, Reserve, Spend};
use crate::db::models::message::NewMessage;
use crate::db::models::usage::NewUsage;
use crate::domain::{MessageRole, MessageStatus};
use crate::llm::{self, ChatMessage};
use crate::turn::engine::Who;
use crate::turn::events::{ErrorEvent, FinishReason, TurnEvent};
use crate::turn::plan::{clamp_output, limits_of, Plan};
use crate::turn::sql as turn_db;
use crate::turn::step::call::Answered;
use crate::turn::step::Step;

/// How long one attempt at storing (a step, or a finished turn) may take, waiting for a
/// connection included (a frozen database must not stall the retries).
pub(in crate::turn) const STORE_ATTEMPT: Duration = Duration::from_secs(10);

/// The next model call, as a step's commit reserved it.
pub(in crate::turn) struct NextCall {
    /// Its reservation and the output cap it leaves room for.
    pub call: (Hold, u32),
    /// The role as the commit read it (not narrowed yet).
    pub role: turn_db::RoleNow,
}

impl Step<'_> {
    /// Stores the finished step (the model message with its tool calls, their results, the
    /// audit rows), settles the previous call and reserves the next one for `messages`, in
    /// one commit. `Ok(None)`: the budget is spent. Once committed, `record` is empty.
    pub(in crate::turn) async fn commit(
        &self,
        plan: &Plan,
        messages: &[ChatMessage],
        record: &mut TurnRecord,
    ) -> Result<Option<NextCall>, Ending> {
        let engine = self.engine;
        let estimate = plan.estimate_input(messages);
        let catalogue = engine.catalogue.now();
        let max_output =
            i64::from(plan.output_cap(limits_of(&catalogue, &engine.settings, &plan.model).1));
        let step = turn_db::Step {
            settle: record.pending.clone(),
            messages: record.messages.clone(),
            usage: record.usage.clone(),
            audit: record.audit.clone(),
            input: estimate,
            // The price in force now: a turn that outlives a price change reserves at the
            // new one, as it is charged.
            price: catalogue
                .get(&plan.model)
                .and_then(|m| m.price_at(chrono::Utc::now())),
            want: estimate + max_output,
            need: estimate + max_output.min(crate::budget::MIN_USEFUL_OUTPUT),
            now: (engine.clock)(),
            hold_ttl: engine.hold_ttl(),
            process_id: engine.process_id,
            turn: HoldTurn {
                turn_id: self.who.turn_id,
                conversation_id: self.who.conversation_id,
            },
        };
        drop(catalogue);
        let reserved = async {
            // A lost conflict committed nothing: the same commit is sent again.
            let mut retry = Retry::new(Transaction::TurnStep, &engine.metrics.db_conflicts);
            loop {
                // Patient, like the final store: tool turns of a burst queue for the pool
                // here too.
                let mut conn = db::conn_patiently(&engine.pool, STORE_ATTEMPT)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                match turn_db::next_call(&mut conn, self.who.user_id, &step).await {
                    Err(e) if retry.again(&e).await => {}
                    other => return other.map_err(anyhow::Error::from),
                }
            }
        }
        .await;
        let next = match reserved {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "storing a step failed");
                return Err(unavailable());
            }
        };
        // Committed: the step, the settlement and the audit rows are stored, whatever the
        // reservation. Followers now find the step in Postgres; memory lets it go.
        record.pending = None;
        record.messages.clear();
        record.usage.clear();
        record.audit.clear();
        self.events.committed();
        engine.announce(self.events);
        match next.reserve {
            Ok(Reserve::Granted(hold)) => {
                let cap = clamp_output(hold.output_room(estimate), max_output);
                Ok(Some(NextCall {
                    call: (hold, cap),
                    role: next.role,
                }))
            }
            Ok(_) => {
                engine.metrics.budget_refusals.inc();
                Ok(None)
            }
            Err(e) => {
                tracing::error!(error = %e, "reserving budget failed after the step was stored");
                Err(unavailable())
            }
        }
    }
}

/// The turn stops because the database failed it.
pub(in crate::turn) fn unavailable() -> Ending {
    Ending::Failed {
        code: "unavailable".into(),
        message: "the database is unavailable; the turn was stopped".into(),
    }
}

/// What a turn produced, stored in one commit at its end.
#[derive(Default)]
pub(in crate::turn) struct TurnRecord {
    pub(in crate::turn) messages: Vec<NewMessage>,
    pub(in crate::turn) usage: Vec<NewUsage>,
    /// Audit rows not yet stored (flushed at the next model call and at the end).
    pub(in crate::turn) audit: Vec<NewAudit>,
    /// The last call's hold and its real usage, settled with the record.
    pub(in crate::turn) pending: Option<(Hold, Spend)>,
    /// The turn's latest assistant message, stored or not (what `done` names).
    pub(in crate::turn) last_assistant: Option<Uuid>,
    /// Tokens providers reported beyond what was reserved.
    pub(in crate::turn) overrun: u64,
}

impl TurnRecord {
    /// Accounts one model call: what it really used is recorded; the budget is charged at
    /// most the reservation (the excess is logged, the limit stays hard).
    pub(in crate::turn) fn account(
        &mut self,
        turn: &Who,
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
pub(in crate::turn) fn incomplete_assistant(
    turn: &Who,
    answered: &Answered,
    text: String,
    reason: &str,
    elapsed: i64,
) -> NewMessage {
    let output = llm::estimate_tokens(&text);
    NewMessage {
        status: MessageStatus::Incomplete,
        status_reason: Some(reason.to_owned()),
        output_tokens: Some(clamp_i64(output)),
        ..NewMessage::answer(turn.conversation_id, text, answered.model.clone(), elapsed)
    }
}

/// Marks the last assistant message incomplete (its tool calls never got results).
pub(in crate::turn) fn mark_incomplete(produced: &mut [NewMessage], reason: &str) {
    if let Some(m) = produced
        .iter_mut()
        .rev()
        .find(|m| m.role == MessageRole::Assistant)
    {
        m.status = MessageStatus::Incomplete;
        m.status_reason = Some(reason.to_owned());
    }
}

pub(in crate::turn) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(in crate::turn) fn clamp_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
/// How the whole turn ended.
pub(in crate::turn) enum Ending {
    Finished(FinishReason),
    Failed {
        code: String,
        message: String,
    },
    /// The start never committed: there is nothing to store or release.
    Unstored,
}
/// The turn's final event if what it produced is stored (recorded with the last commit).
pub(in crate::turn) fn final_event(
    ending: &Ending,
    last_assistant: Option<Uuid>,
    shutdown: bool,
) -> TurnEvent {
    match ending {
        _ if shutdown => error_event(
            "shutdown",
            "the server is restarting; what was produced so far is saved",
        ),
        Ending::Finished(finish_reason) => TurnEvent::Done {
            message_id: last_assistant,
            finish_reason: *finish_reason,
        },
        Ending::Failed { code, message } => error_event(code, message),
        Ending::Unstored => error_event(
            "unavailable",
            "the database did not confirm your message, so it may not have been saved; \
             reload the conversation and try again",
        ),
    }
}

fn error_event(code: &str, message: &str) -> TurnEvent {
    TurnEvent::Error(Box::new(ErrorEvent {
        code: code.to_owned(),
        message: message.to_owned(),
    }))
}

/// The turn ran, but what it produced could not be stored before its deadline.
pub(in crate::turn) fn unsaved() -> TurnEvent {
    error_event(
        "unavailable",
        "the database is unavailable, so this reply could not be saved; try again shortly",
    )
}
