//! What a turn stored, as a re-attaching client reads it: the turn is named by the user
//! message that started it; its steps are the messages after that one (up to the next user
//! message); its end is the final event recorded with its last commit (`turn_ends`).

use diesel::sql_types::{BigInt, Bool, Jsonb, Nullable, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::message::Message;
use crate::db::prepared::sql;

/// Records how the turn ended (pipelined with the turn's last commit; a retried commit whose
/// first answer was lost finds it there already).
pub fn record(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    event: serde_json::Value,
) -> BoxFuture<'static, diesel::QueryResult<()>> {
    sql(
        "INSERT INTO turn_ends (turn_id, conversation_id, event) VALUES ($1, $2, $3) \
         ON CONFLICT (turn_id) DO NOTHING",
    )
    .bind::<SqlUuid, _>(turn_id)
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<Jsonb, _>(event)
    .execute(conn)
    .map(|r| r.map(drop))
    .boxed()
}

/// Forgets how the turn ended: it runs again (resumed after its approvals).
pub async fn forget(conn: &mut AsyncPgConnection, turn_id: Uuid) -> diesel::QueryResult<()> {
    sql("DELETE FROM turn_ends WHERE turn_id = $1")
        .bind::<SqlUuid, _>(turn_id)
        .execute(conn)
        .await
        .map(drop)
}

/// A turn as the database has it now.
#[derive(Debug, QueryableByName)]
pub struct TurnStatus {
    /// Where the turn's user message sits in the conversation.
    #[diesel(sql_type = BigInt)]
    pub seq: i64,
    /// The conversation is still claimed by this turn.
    #[diesel(sql_type = Bool)]
    pub running: bool,
    /// The final event, once the turn stored its end.
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub end: Option<serde_json::Value>,
}

/// The turn `turn_id` of the user's conversation (`None`: no such turn, or not theirs). Read
/// before the turn's messages: whatever this says has ended is whole in a later read.
pub async fn status(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    conversation_id: Uuid,
    turn_id: Uuid,
) -> diesel::QueryResult<Option<TurnStatus>> {
    use diesel::OptionalExtension;
    sql(
        "SELECT m.seq, (c.active_turn_id IS NOT DISTINCT FROM m.id) AS running, e.event AS end \
           FROM messages m \
           JOIN conversations c ON c.id = m.conversation_id \
           LEFT JOIN turn_ends e ON e.turn_id = m.id \
          WHERE m.id = $1 AND m.conversation_id = $2 AND c.user_id = $3 AND m.role = 'user'",
    )
    .bind::<SqlUuid, _>(turn_id)
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(user_id)
    .get_result(conn)
    .await
    .optional()
}

/// The messages the turn stored after its user message (at `seq`), in order.
pub async fn messages(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    seq: i64,
) -> diesel::QueryResult<Vec<Message>> {
    sql(
        "SELECT id, seq, conversation_id, role, content, tool_calls, tool_call_id, status, \
                status_reason, model, input_tokens, output_tokens, duration_ms, created_at, \
                attachments, citations \
           FROM messages \
          WHERE conversation_id = $1 AND seq > $2 \
            AND seq < COALESCE((SELECT min(seq) FROM messages \
                                 WHERE conversation_id = $1 AND seq > $2 AND role = 'user'), \
                               9223372036854775807) \
          ORDER BY seq",
    )
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<BigInt, _>(seq)
    .load(conn)
    .await
}
