//! `Idempotency-Key`s of sent messages: which turn a key started, for 24 hours.

use diesel::sql_types::{Bytea, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::db::prepared::sql;

/// A key as the client sent it, with the hash of the request it came with.
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    pub key: String,
    pub request_hash: Vec<u8>,
}

impl IdempotencyKey {
    /// The key of a message `content` sent to `conversation_id` with `attachments` (paths as
    /// sent): the same key with other files attached is a different request.
    pub fn new(key: &str, conversation_id: Uuid, content: &str, attachments: &[String]) -> Self {
        let mut h = Sha256::new();
        h.update(conversation_id.as_bytes());
        h.update(content.as_bytes());
        // Nothing added without attachments: such a request hashes as it always did. Each path
        // goes with its length, so that no two lists hash alike.
        if !attachments.is_empty() {
            h.update(b"\0attachments");
            for path in attachments {
                h.update((path.len() as u64).to_be_bytes());
                h.update(path.as_bytes());
            }
        }
        Self {
            key: key.to_owned(),
            request_hash: h.finalize().to_vec(),
        }
    }
}

/// The turn a key started.
#[derive(Debug, Clone, QueryableByName)]
pub struct Started {
    #[diesel(sql_type = Bytea)]
    pub request_hash: Vec<u8>,
    #[diesel(sql_type = SqlUuid)]
    pub conversation_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub turn_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub user_message_id: Uuid,
}

/// The turn `key` started within the last 24 hours, if any.
pub async fn find(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    key: &str,
) -> diesel::QueryResult<Option<Started>> {
    // Raw SQL: interval arithmetic on now(), prepared once per connection and pipelined on the turn's path (see db::prepared).
    let found: Vec<Started> = sql(
        "SELECT request_hash, conversation_id, turn_id, user_message_id FROM idempotency_keys \
         WHERE user_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'",
    )
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(key.to_owned())
    .load(conn)
    .await?;
    Ok(found.into_iter().next())
}

/// Records that `key` started this turn (replacing an expired use of the key). Pipelinable:
/// it is stored in the turn's first commit, with the user message.
pub fn record(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    key: &IdempotencyKey,
    conversation_id: Uuid,
    turn_id: Uuid,
    user_message_id: Uuid,
) -> BoxFuture<'static, diesel::QueryResult<()>> {
    // Raw SQL: ON CONFLICT … DO UPDATE … WHERE, prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("INSERT INTO idempotency_keys AS k \
             (user_id, key, request_hash, conversation_id, turn_id, user_message_id) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (user_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, \
             conversation_id = EXCLUDED.conversation_id, turn_id = EXCLUDED.turn_id, \
             user_message_id = EXCLUDED.user_message_id, created_at = now() \
         WHERE k.created_at <= now() - interval '24 hours'")
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(key.key.clone())
    .bind::<Bytea, _>(key.request_hash.clone())
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(turn_id)
    .bind::<SqlUuid, _>(user_message_id)
    .execute(conn)
    .map(|r| r.map(drop))
    .boxed()
}

/// Forgets keys older than 24 hours.
pub async fn expire(conn: &mut AsyncPgConnection) -> diesel::QueryResult<usize> {
    // Raw SQL: interval arithmetic on now(), prepared once per connection and pipelined on the turn's path (see db::prepared).
    sql("DELETE FROM idempotency_keys WHERE created_at <= now() - interval '24 hours'")
        .execute(conn)
        .await
}
