//! The end of a turn on the database side: storing it, or releasing its claim when it
//! cannot be stored (or panicked), and whether a conversation has a turn running.
//!
//! A release changes only the claim's columns, which no index holds, so Postgres stores it
//! as a HOT update (no index entries). It leaves `updated_at` alone: a conversation is as
//! recent as its last turn's start, when the claim set it.

use diesel::prelude::*;
use diesel::sql_types::{Jsonb, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::audit::NewAudit;
use crate::db::models::budget::{self, Guard, Hold, Spend};
use crate::db::models::message::NewMessage;
use crate::db::models::usage::{self, NewUsage};
use crate::db::pipelined::Pipelined;
use crate::db::prepared::{joined, sql, Joined};
use crate::turn::sql::rows::Rows;

/// The end of a turn, stored by [`finish`].
pub struct Finish {
    pub conversation_id: Uuid,
    pub turn_id: Uuid,
    pub rows: Vec<NewMessage>,
    pub usage_rows: Vec<NewUsage>,
    pub audit_rows: Vec<NewAudit>,
    pub settle: Option<(Hold, Spend)>,
    /// The turn's final event, for clients re-attaching after the end.
    pub end: serde_json::Value,
}

/// Settles the last hold, stores what the turn produced, its usage and its final event, and
/// releases the claim, all or nothing, in one round trip: one statement, a transaction of
/// its own ([`crate::db::prepared::Joined`]: no BEGIN, no COMMIT, one executor start-up).
/// A hold with money settles its two periods in statements of their own, so that end is a
/// pipelined transaction instead.
///
/// The conversation row is locked before the budget rows, as in `begin`: two transactions
/// taking them in opposite orders could deadlock. A turn that no longer holds its claim (it
/// was ended as interrupted while this process could not reach the database) stores
/// nothing: the release fails the statement ([`is_claim_lost`]).
pub async fn finish(conn: &mut AsyncPgConnection, f: Finish) -> QueryResult<()> {
    let Finish {
        conversation_id,
        turn_id,
        rows,
        usage_rows,
        audit_rows,
        settle,
        end,
    } = f;
    let released = release_own(conversation_id, turn_id, end);
    let one = match &settle {
        None => Ok(released),
        Some((hold, spend)) => budget::settle_within(released, hold, *spend, Guard::Released),
    };
    let rows = Rows {
        messages: &rows,
        usage: &usage_rows,
        audit: &audit_rows,
    };
    match one {
        Ok(one) => {
            let stored = rows.within(one).get_result::<One>(conn).boxed();
            stored.await.map(drop)
        }
        Err(released) => {
            let mut tx = Pipelined::open(conn);
            let released = released.get_result::<One>(tx.conn()).boxed();
            let stored = rows.store_settling(tx.conn(), settle.as_ref());
            let work = futures_util::future::try_join(released, stored);
            tx.run(work).await.map(|_| ())
        }
    }
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    #[allow(dead_code)]
    n: i64,
}

/// Releases the claim of `turn_id` (part `r`) and records the turn's final event `end`
/// (what a client re-attaching after the end is given), failing the statement (division by
/// zero) when the conversation is not claimed by it.
fn release_own(conversation_id: Uuid, turn_id: Uuid, end: serde_json::Value) -> Joined {
    joined(sql("SELECT (1 / count(*))::BIGINT AS n FROM r").part())
        .with(
            "r",
            sql("UPDATE conversations \
                    SET active_turn_id = NULL, active_turn_at = NULL, active_process_id = NULL \
                  WHERE id = $1 AND active_turn_id = $2 RETURNING 1")
            .bind::<SqlUuid, _>(conversation_id)
            .bind::<SqlUuid, _>(turn_id)
            .part(),
        )
        .with(
            "e",
            sql("INSERT INTO turn_ends (turn_id, conversation_id, event) \
                 SELECT $1, $2, $3 FROM r ON CONFLICT (turn_id) DO NOTHING")
            .bind::<SqlUuid, _>(turn_id)
            .bind::<SqlUuid, _>(conversation_id)
            .bind::<Jsonb, _>(end)
            .part(),
        )
}

/// Whether [`finish`] failed because the turn no longer holds its conversation.
pub fn is_claim_lost(e: &diesel::result::Error) -> bool {
    matches!(e, diesel::result::Error::DatabaseError(_, info) if info.message().contains("division by zero"))
}

/// Releases the claim of a turn that could not be stored, charging its last hold what the
/// model used (and recording that usage: the ledger matches the budget) and recording the
/// error its client was given as its end.
pub async fn release_with(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    settle: Option<(Hold, Spend)>,
    usage_rows: &[NewUsage],
    end: serde_json::Value,
) -> QueryResult<()> {
    let mut tx = Pipelined::open(conn);
    let released = release(tx.conn(), conversation_id, turn_id);
    let settled = match &settle {
        Some((h, actual)) => budget::settle(tx.conn(), h, *actual),
        None => futures_util::future::ready(Ok(0)).boxed(),
    };
    let recorded = usage::insert_many(tx.conn(), usage_rows);
    let ended = crate::turn::sql::end::record(tx.conn(), conversation_id, turn_id, end);
    tx.run(futures_util::future::try_join4(
        released, settled, recorded, ended,
    ))
    .await
    .map(|_| ())
}

/// Releases the claim of `turn_id` (after a panic, with its hold released uncharged).
pub async fn abandon(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    hold: Option<Hold>,
) -> QueryResult<()> {
    let mut tx = Pipelined::open(conn);
    // Conversation row first, then the budget row, as everywhere.
    let released = release(tx.conn(), conversation_id, turn_id);
    let settled = match &hold {
        Some(h) => budget::settle(tx.conn(), h, Spend::default()),
        None => futures_util::future::ready(Ok(0)).boxed(),
    };
    let work = futures_util::future::try_join(released, settled);
    tx.run(work).await.map(|_| ())
}

fn release(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
) -> BoxFuture<'static, QueryResult<usize>> {
    sql("UPDATE conversations \
            SET active_turn_id = NULL, active_turn_at = NULL, active_process_id = NULL \
          WHERE id = $1 AND active_turn_id = $2")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(turn_id)
    .execute(conn)
    .boxed()
}

pub use crate::db::models::conversation::active_turn;

/// Whether a turn is running in the conversation (on any replica).
pub async fn is_active(conn: &mut AsyncPgConnection, conversation_id: Uuid) -> QueryResult<bool> {
    active_turn(conn, conversation_id)
        .await
        .map(|t| t.is_some())
}
