//! The usage ledger: one row per model call, written with the turn's messages so the
//! per-user report agrees with the per-message usage stored with each conversation.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use serde::Serialize;
use uuid::Uuid;

use crate::db::prepared::{column, sql};

#[derive(Debug, Clone)]
pub struct NewUsage {
    pub user_id: Uuid,
    pub conversation_id: Option<Uuid>,
    pub message_id: Option<Uuid>,
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub charged: i64,
}

/// Inserts the rows with one statement of fixed text (prepared once per connection); the
/// future does not borrow the connection (pipelinable).
pub fn insert_many(
    conn: &mut AsyncPgConnection,
    rows: &[NewUsage],
) -> BoxFuture<'static, QueryResult<()>> {
    if rows.is_empty() {
        return future::ready(Ok(())).boxed();
    }
    sql(
        "INSERT INTO usage_records (user_id, conversation_id, message_id, model, input_tokens, \
                                    output_tokens, charged) \
         SELECT user_id, conversation_id, message_id, model, input_tokens, output_tokens, charged \
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::int8[], $6::int8[], \
                     $7::int8[]) \
              WITH ORDINALITY AS r (user_id, conversation_id, message_id, model, input_tokens, \
                                    output_tokens, charged, n) \
         ORDER BY n",
    )
    .bind::<Array<SqlUuid>, _>(column(rows, |r| r.user_id))
    .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.conversation_id))
    .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.message_id))
    .bind::<Array<Text>, _>(column(rows, |r| r.model.clone()))
    .bind::<Array<BigInt>, _>(column(rows, |r| r.input_tokens))
    .bind::<Array<BigInt>, _>(column(rows, |r| r.output_tokens))
    .bind::<Array<BigInt>, _>(column(rows, |r| r.charged))
    .execute(conn)
    .map(|r| r.map(|_| ()))
    .boxed()
}

/// Tokens of one user with one model.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct UserModelUsage {
    #[diesel(sql_type = SqlUuid)]
    pub user_id: Uuid,
    #[diesel(sql_type = Text)]
    pub username: String,
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub calls: i64,
}

/// Tokens per user and model between `from` (inclusive) and `to` (exclusive, open if None);
/// a deleted account keeps its rows, named from its tombstone.
pub async fn by_user_and_model(
    conn: &mut AsyncPgConnection,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> QueryResult<Vec<UserModelUsage>> {
    diesel::sql_query(
        "SELECT r.user_id, \
                COALESCE(u.username, d.username || ' (deleted)', 'deleted user') AS username, \
                r.model, sum(r.input_tokens)::BIGINT AS input_tokens, \
                sum(r.output_tokens)::BIGINT AS output_tokens, count(*)::BIGINT AS calls \
         FROM usage_records r LEFT JOIN users u ON u.id = r.user_id \
              LEFT JOIN deleted_users d ON d.id = r.user_id \
         WHERE r.created_at >= $1 AND ($2::timestamptz IS NULL OR r.created_at < $2) \
         GROUP BY r.user_id, 2, r.model ORDER BY 2, r.model",
    )
    .bind::<Timestamptz, _>(from)
    .bind::<Nullable<Timestamptz>, _>(to)
    .load(conn)
    .await
}
