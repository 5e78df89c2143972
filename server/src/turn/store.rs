//! Storing a finished turn: the final commit (retried, salvaged), and the release of a turn
//! that could not store. A step's commit is [`crate::turn::step::commit`].

use std::collections::HashSet;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::db;
use crate::db::models::budget::Hold;
use crate::db::models::message;
use crate::turn::engine::{TurnEngine, Who};
use crate::turn::events::TurnEvent;
use crate::turn::plan::STORE_GRACE;
use crate::turn::sql as turn;
use crate::turn::step::commit::{TurnRecord, STORE_ATTEMPT};
pub(super) use crate::turn::store_failure::Persisted;
use crate::turn::store_failure::{store_failed, Failure};

/// Storing a finished turn keeps trying until the turn's deadline, and at least this long
/// after the turn ended (a turn stopped by its deadline still gets its chance).
const MIN_STORE_WINDOW: Duration = Duration::from_secs(30);

/// Stores the rest of the turn (messages, usage, the last settlement, its final event
/// `end`) and releases the conversation, retrying until `deadline` (at least
/// [`MIN_STORE_WINDOW`] from now) while the failure is one that passes (a lost
/// connection, a serialization failure, a deadlock). A failure that would only repeat
/// (a constraint, an overflow) stops the retries at once: the turn is stored as
/// incomplete without its usage rows ([`Persisted::Salvaged`]). When nothing could be
/// stored, the claim and the hold are released in the background as soon as the
/// database answers again.
pub(super) async fn persist(
    engine: &TurnEngine,
    turn: &Who,
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
            store_once(engine, turn, &mut record, &end, left.min(STORE_ATTEMPT)),
        )
        .await
        .unwrap_or_else(|_| Err(Failure::Passing(anyhow::anyhow!("storing took too long"))));
        match result {
            Ok(lost) => {
                settled(turn);
                if lost == Some(false) {
                    tracing::warn!(conversation = %turn.conversation_id,
                            "the turn was ended elsewhere while it could not be stored");
                    return Persisted::Lost;
                }
                return Persisted::Stored;
            }
            Err(Failure::Lasting(e)) => {
                tracing::error!(error = %e, conversation = %turn.conversation_id,
                        "storing the turn failed in a way retrying cannot mend; storing it as incomplete");
                return salvage(engine, turn, record).await;
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
    release_later(
        engine,
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
    engine: &TurnEngine,
    turn: &Who,
    record: &mut TurnRecord,
    end: &serde_json::Value,
    wait: Duration,
) -> Result<Option<bool>, Failure> {
    let mut conn = db::conn_patiently(&engine.pool, wait)
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
    if stored.as_ref().is_err_and(db::conflict::is_conflict) {
        // Retried by `persist` like any failure that passes; counted with the others.
        let label = db::conflict::Transaction::TurnEnd.label();
        engine
            .metrics
            .db_conflicts
            .with_label_values(&[label])
            .inc();
    }
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
async fn salvage(engine: &TurnEngine, turn: &Who, mut record: TurnRecord) -> Persisted {
    let event = store_failed();
    crate::turn::step::commit::mark_incomplete(&mut record.messages, "store_failed");
    if !record.usage.is_empty() {
        tracing::error!(rows = ?record.usage.iter().map(|u| (u.input_tokens, u.output_tokens, u.cost.clone())).collect::<Vec<_>>(),
                conversation = %turn.conversation_id, "usage rows left out of a salvaged turn");
    }
    record.usage.clear();
    let end = serde_json::to_value(&event).unwrap_or(serde_json::Value::Null);
    let stored = tokio::time::timeout(
        STORE_ATTEMPT,
        store_once(engine, turn, &mut record, &end, STORE_ATTEMPT),
    )
    .await;
    match stored {
        Ok(Ok(None | Some(true))) => {
            settled(turn);
            Persisted::Salvaged(event)
        }
        other => {
            if let Ok(Err(e)) = other {
                tracing::error!(error = %e, conversation = %turn.conversation_id,
                        "the turn could not be stored even as incomplete; releasing it");
            }
            release_later(
                engine,
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
fn settled(turn: &Who) {
    if let Ok(mut o) = turn.outstanding.lock() {
        *o = None;
    }
}

/// Keeps trying to release a turn that could not be stored (its claim, and its hold
/// charged what the model used) until the claim would expire anyway.
fn release_later(
    engine: &TurnEngine,
    turn_id: Uuid,
    conversation_id: Uuid,
    hold: Option<(Hold, crate::db::models::budget::Spend)>,
    usage: Vec<crate::db::models::usage::NewUsage>,
) {
    let agent = engine.clone();
    tokio::spawn(async move {
        let until = Instant::now() + STORE_GRACE;
        while Instant::now() < until {
            let done = tokio::time::timeout(STORE_ATTEMPT, async {
                let mut conn = db::conn(&agent.pool).await.ok()?;
                let end =
                    serde_json::to_value(crate::turn::step::commit::unsaved()).unwrap_or_default();
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
    engine: &TurnEngine,
    turn_id: Uuid,
    conversation_id: Uuid,
    outstanding: Option<Hold>,
) {
    let result = async {
        let mut conn = db::conn(&engine.pool)
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
