//! The history a turn's start reads: the newest messages that could fit in the model's
//! context ([`list_recent`]), or, when this process already holds the conversation's history
//! up to some message, only what was stored after it ([`list_after`]; see
//! `crate::turn::history_cache`). Both are pipelined into the start's first round trip, count
//! the conversation's messages (the size bound a turn checks) without a statement of their own,
//! and read rows by position.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use super::message::Message;
use crate::db::prepared::sql;

/// The newest messages that could fit in a turn's context ([`list_recent`]).
#[derive(Debug, Default)]
pub struct Recent {
    /// Oldest first.
    pub messages: Vec<Message>,
    /// What each of `messages` was stored as costing at least (`history_cost`; 0 when
    /// unknown), in the same order: what the cut is made on.
    pub costs: Vec<i64>,
    /// Every message of the conversation, kept or not (the size bound a turn checks).
    pub total: i64,
}

/// What was stored after a known message ([`list_after`]).
#[derive(Debug, Default)]
pub struct After {
    /// The known message is still there, so nothing up to it changed: a conversation only
    /// grows, except when an edit removes every message from one on.
    pub intact: bool,
    /// The messages after it, oldest first.
    pub messages: Vec<Message>,
    /// Their stored costs, as in [`Recent::costs`].
    pub costs: Vec<i64>,
}

/// The SQL type of a [`Message`] read by position (the columns in the struct's order).
type MessageRow = diesel::dsl::SqlTypeOf<<Message as Selectable<diesel::pg::Pg>>::SelectExpression>;

/// The newest messages that could fit in `room` estimated tokens, oldest first: every
/// message the context assembly (`turn::context`) could keep, and no more than a window's
/// worth of the rest. A long conversation would otherwise be read whole on every turn, only
/// for most of it to be dropped.
///
/// Each message stores the least it can cost there (`message::history_cost_floor`); a
/// message stays when it and everything newer add up to at most `room`. The cut is found from
/// the index on (conversation, seq) that carries those costs; only the messages after it are
/// read whole. The same pass counts the conversation's messages; the count comes on every
/// row, and on a row of its own (no message) when none is kept. Pipelinable.
pub fn list_recent(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    room: u64,
) -> BoxFuture<'static, QueryResult<Recent>> {
    // Raw SQL: a window function (running sum) in a CTE; the select list is in the order of
    // `Message`'s fields.
    sql("WITH newer AS ( \
             SELECT seq, sum(COALESCE(history_cost, 0)) OVER (ORDER BY seq DESC) AS cost \
             FROM messages WHERE conversation_id = $1), \
         cut AS ( \
             SELECT count(*) AS total, \
                    COALESCE(min(seq) FILTER (WHERE cost <= $2), 9223372036854775807) AS first \
             FROM newer) \
         SELECT cut.total, m.id, m.seq, m.conversation_id, m.role, m.content, m.tool_calls, \
                m.tool_call_id, m.attachments, m.status, m.status_reason, m.model, \
                m.input_tokens, m.output_tokens, m.duration_ms, m.created_at, m.citations, \
                COALESCE(m.history_cost, 0)::BIGINT AS cost \
         FROM cut LEFT JOIN messages m ON m.conversation_id = $1 AND m.seq >= cut.first \
         ORDER BY m.seq")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<BigInt, _>(i64::try_from(room).unwrap_or(i64::MAX))
    .returns::<(BigInt, Nullable<MessageRow>, BigInt)>()
    .load::<(i64, Option<Message>, i64)>(conn)
    .map(|rows| {
        rows.map(|rows| {
            let total = <[_]>::first(&rows).map_or(0, |(total, _, _)| *total);
            let (messages, costs) = rows
                .into_iter()
                .filter_map(|(_, m, cost)| m.map(|m| (m, cost)))
                .unzip();
            Recent {
                messages,
                costs,
                total,
            }
        })
    })
    .boxed()
}

/// The messages stored after the one at `seq`, oldest first, and whether that one is still
/// there. An index range over the new messages only, however long the conversation.
/// Pipelinable.
pub fn list_after(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    seq: i64,
) -> BoxFuture<'static, QueryResult<After>> {
    // Raw SQL: one row even when nothing is newer (the LEFT JOIN), in `Message`'s order.
    sql(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = $1 AND seq = $2) \
                  AS intact, \
                m.id, m.seq, m.conversation_id, m.role, m.content, m.tool_calls, \
                m.tool_call_id, m.attachments, m.status, m.status_reason, m.model, \
                m.input_tokens, m.output_tokens, m.duration_ms, m.created_at, m.citations, \
                COALESCE(m.history_cost, 0)::BIGINT AS cost \
         FROM (SELECT 1) AS one \
         LEFT JOIN messages m ON m.conversation_id = $1 AND m.seq > $2 \
         ORDER BY m.seq",
    )
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<BigInt, _>(seq)
    .returns::<(Bool, Nullable<MessageRow>, Nullable<BigInt>)>()
    .load::<(bool, Option<Message>, Option<i64>)>(conn)
    .map(|rows| {
        rows.map(|rows| {
            let intact = <[_]>::first(&rows).is_some_and(|(intact, _, _)| *intact);
            let (messages, costs) = rows
                .into_iter()
                .filter_map(|(_, m, cost)| m.map(|m| (m, cost.unwrap_or(0))))
                .unzip();
            After {
                intact,
                messages,
                costs,
            }
        })
    })
    .boxed()
}
