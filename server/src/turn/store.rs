//! Storing a turn: the start's commit, one commit per finished step (with the settlement of
//! the last model call and the reservation of the next), the final commit, and the release of
//! a turn that could not store.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::db;
use crate::db::models::budget::{Hold, Reserve};
use crate::db::models::message;
use crate::llm::ChatMessage;
use crate::turn::ending::Ending;
use crate::turn::engine::{PreparedTurn, TurnEngine};
use crate::turn::events::TurnEvent;
use crate::turn::record::TurnRecord;
use crate::turn::sql as turn;
pub(super) use crate::turn::store_failure::Persisted;
use crate::turn::store_failure::{store_failed, Failure};

/// How long one attempt at storing a finished turn may take, waiting for a connection
/// included (a frozen database must not stall the retries).
const STORE_ATTEMPT: Duration = Duration::from_secs(10);

/// Storing a finished turn keeps trying until the turn's deadline, and at least this long
/// after the turn ended (a turn stopped by its deadline still gets its chance).
const MIN_STORE_WINDOW: Duration = Duration::from_secs(30);

pub use crate::turn::limits::STORE_GRACE;

impl TurnEngine {
    /// Stores the finished step (the model message with its tool calls, their results, the
    /// audit rows), settles the previous call and reserves the next one, in one commit.
    /// `Ok(None)`: the budget is spent.
    pub(super) async fn budget_for_next_call(
        &self,
        turn: &PreparedTurn,
        messages: &[ChatMessage],
        allowed: &[String],
        record: &mut TurnRecord,
    ) -> Result<Option<((Hold, u32), turn::RoleNow)>, Ending> {
        let estimate = self.estimate_input(messages, allowed, &turn.tools);
        let max_output = i64::from(crate::turn::sql::preset::output_cap(
            turn.assistant.as_deref(),
            self.limits_of(&turn.model).1,
        ));
        let step = turn::Step {
            settle: record.pending.clone(),
            messages: record.messages.clone(),
            usage: record.usage.clone(),
            audit: record.audit.clone(),
            input: estimate,
            // The price in force now: a turn that outlives a price change reserves at the
            // new one, as it is charged.
            price: self
                .catalogue
                .now()
                .get(&turn.model)
                .and_then(|m| m.price_at(chrono::Utc::now())),
            want: estimate + max_output,
            need: estimate + max_output.min(crate::budget::MIN_USEFUL_OUTPUT),
            now: (self.clock)(),
            hold_ttl: self.hold_ttl(),
            process_id: self.process_id,
            turn_id: turn.turn_id,
        };
        let reserved = async {
            // Patient, like the final store: tool turns of a burst queue for the pool here too.
            let mut conn = db::conn_patiently(&self.pool, STORE_ATTEMPT)
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
        if let Some(log) = self.turns.log_of(turn.turn_id) {
            log.committed();
            self.announce(&log);
        }
        match next.reserve {
            Ok(Reserve::Granted(hold)) => {
                let cap = crate::turn::limits::clamp_output(hold.output_room(estimate), max_output);
                Ok(Some(((hold, cap), next.role)))
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

    /// Stores the rest of the turn (messages, usage, the last settlement, its final event
    /// `end`) and releases the conversation, retrying until `deadline` (at least
    /// [`MIN_STORE_WINDOW`] from now) while the failure is one that passes (a lost
    /// connection, a serialization failure, a deadlock). A failure that would only repeat
    /// (a constraint, an overflow) stops the retries at once: the turn is stored as
    /// incomplete without its usage rows ([`Persisted::Salvaged`]). When nothing could be
    /// stored, the claim and the hold are released in the background as soon as the
    /// database answers again.
    pub(super) async fn persist(
        &self,
        turn: &PreparedTurn,
        mut record: TurnRecord,
        deadline: Instant,
        end: &TurnEvent,
    ) -> Persisted {
        let end = serde_json::to_value(end).unwrap_or(serde_json::Value::Null);
        let until = deadline.max(Instant::now() + MIN_STORE_WINDOW);
        let mut attempt = 0u32;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let result = tokio::time::timeout(
                left.min(STORE_ATTEMPT),
                self.store_once(turn, &mut record, &end, left.min(STORE_ATTEMPT)),
            )
            .await
            .unwrap_or_else(|_| Err(Failure::Passing(anyhow::anyhow!("storing took too long"))));
            match result {
                Ok(settled) => {
                    self.settled(turn);
                    if settled == Some(false) {
                        tracing::warn!(conversation = %turn.conversation_id,
                            "the turn was ended elsewhere while it could not be stored");
                        return Persisted::Lost;
                    }
                    return Persisted::Stored;
                }
                Err(Failure::Lasting(e)) => {
                    tracing::error!(error = %e, conversation = %turn.conversation_id,
                        "storing the turn failed in a way retrying cannot mend; storing it as incomplete");
                    return self.salvage(turn, record).await;
                }
                Err(Failure::Passing(e)) => {
                    tracing::error!(attempt, error = %e, conversation = %turn.conversation_id,
                        "storing the turn failed; retrying");
                }
            }
            let pause = Duration::from_millis(200u64 << attempt.min(3));
            if Instant::now() + pause >= until {
                break;
            }
            tokio::time::sleep(pause).await;
            attempt += 1;
        }
        tracing::error!(conversation = %turn.conversation_id,
            "the turn could not be stored before its deadline; releasing it");
        self.release_later(
            turn.turn_id,
            turn.conversation_id,
            record.pending,
            record.usage,
        );
        Persisted::Lost
    }

    /// One attempt at the final commit. `Some(stored)`: the turn had lost its claim, and
    /// whether an earlier commit whose answer was lost had stored it.
    async fn store_once(
        &self,
        turn: &PreparedTurn,
        record: &mut TurnRecord,
        end: &serde_json::Value,
        wait: Duration,
    ) -> Result<Option<bool>, Failure> {
        let mut conn = db::conn_patiently(&self.pool, wait)
            .await
            .map_err(|e| Failure::Passing(anyhow::anyhow!("no database connection: {e}")))?;
        let stored = turn::finish(
            &mut conn,
            turn::Finish {
                conversation_id: turn.conversation_id,
                turn_id: turn.turn_id,
                rows: record.messages.clone(),
                usage_rows: record.usage.clone(),
                audit_rows: record.audit.clone(),
                settle: record.pending.clone(),
                end: end.clone(),
            },
        )
        .await;
        match &stored {
            Err(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _,
            )) => {
                // An earlier commit whose answer was lost did store some of these rows.
                drop_stored(&mut conn, record).await.map_err(Failure::of)?;
                return Err(Failure::Passing(anyhow::anyhow!(
                    "rows stored by an earlier commit; storing the rest"
                )));
            }
            Err(e) if turn::is_claim_lost(e) => {
                // Either that earlier commit stored the turn, or the turn was ended
                // elsewhere (its process looked dead): nothing more may be written.
                let last = record.last_assistant.into_iter().collect::<Vec<_>>();
                let stored = message::existing(&mut conn, &last)
                    .await
                    .map_err(Failure::of)?;
                return Ok(Some(!stored.is_empty() || last.is_empty()));
            }
            _ => {}
        }
        stored.map(|()| None).map_err(Failure::of)
    }

    /// Stores a turn whose full commit fails for good: its messages (the last answer marked
    /// incomplete) and audit rows, its hold settled, without the usage rows (the likeliest
    /// culprit), and an `error` end. One attempt; failing that, the turn is released.
    async fn salvage(&self, turn: &PreparedTurn, mut record: TurnRecord) -> Persisted {
        let event = store_failed();
        crate::turn::record::mark_incomplete(&mut record.messages, "store_failed");
        if !record.usage.is_empty() {
            tracing::error!(rows = ?record.usage.iter().map(|u| (u.input_tokens, u.output_tokens, u.cost.clone())).collect::<Vec<_>>(),
                conversation = %turn.conversation_id, "usage rows left out of a salvaged turn");
        }
        record.usage.clear();
        let end = serde_json::to_value(&event).unwrap_or(serde_json::Value::Null);
        let stored = tokio::time::timeout(
            STORE_ATTEMPT,
            self.store_once(turn, &mut record, &end, STORE_ATTEMPT),
        )
        .await;
        match stored {
            Ok(Ok(None | Some(true))) => {
                self.settled(turn);
                Persisted::Salvaged(event)
            }
            other => {
                if let Ok(Err(e)) = other {
                    tracing::error!(error = %e, conversation = %turn.conversation_id,
                        "the turn could not be stored even as incomplete; releasing it");
                }
                self.release_later(
                    turn.turn_id,
                    turn.conversation_id,
                    record.pending,
                    Vec::new(),
                );
                Persisted::Lost
            }
        }
    }

    /// The turn's last hold is settled: nothing is outstanding any more.
    fn settled(&self, turn: &PreparedTurn) {
        if let Ok(mut o) = turn.outstanding.lock() {
            *o = None;
        }
    }

    /// Keeps trying to release a turn that could not be stored (its claim, and its hold
    /// charged what the model used) until the claim would expire anyway.
    fn release_later(
        &self,
        turn_id: Uuid,
        conversation_id: Uuid,
        hold: Option<(Hold, crate::db::models::budget::Spend)>,
        usage: Vec<crate::db::models::usage::NewUsage>,
    ) {
        let agent = self.clone();
        tokio::spawn(async move {
            let until = Instant::now() + STORE_GRACE;
            while Instant::now() < until {
                let done = tokio::time::timeout(STORE_ATTEMPT, async {
                    let mut conn = db::conn(&agent.pool).await.ok()?;
                    let end =
                        serde_json::to_value(crate::turn::ending::unsaved()).unwrap_or_default();
                    turn::release_with(
                        &mut conn,
                        conversation_id,
                        turn_id,
                        hold.clone(),
                        &usage,
                        end,
                    )
                    .await
                    .ok()
                })
                .await;
                if matches!(done, Ok(Some(()))) {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    /// Cleans up after a turn task panicked or its start went unconfirmed: releases its hold
    /// and the conversation.
    pub(crate) async fn abandon(
        &self,
        turn_id: Uuid,
        conversation_id: Uuid,
        outstanding: Option<Hold>,
    ) {
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

/// Removes from `record` the messages (and their usage and audit rows) an earlier commit
/// stored after all.
async fn drop_stored(
    conn: &mut diesel_async::AsyncPgConnection,
    record: &mut TurnRecord,
) -> diesel::QueryResult<()> {
    let ids: Vec<Uuid> = record.messages.iter().map(|m| m.id).collect();
    let stored: HashSet<Uuid> = message::existing(conn, &ids).await?.into_iter().collect();
    let calls: HashSet<String> = record
        .messages
        .iter()
        .filter(|m| stored.contains(&m.id))
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    record.messages.retain(|m| !stored.contains(&m.id));
    record
        .usage
        .retain(|u| !u.message_id.is_some_and(|id| stored.contains(&id)));
    record.audit.retain(|a| !calls.contains(&a.tool_call_id));
    Ok(())
}

/// The turn stops because the database failed it.
pub(super) fn unavailable() -> Ending {
    Ending::Failed {
        code: "unavailable".into(),
        message: "the database is unavailable; the turn was stopped".into(),
    }
}
