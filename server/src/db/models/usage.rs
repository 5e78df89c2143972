//! The usage ledger: one row per model call, written with the turn's messages so the
//! per-user report agrees with the per-message usage stored with each conversation.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Numeric, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::BoxFuture;
use rust_decimal::Decimal;
use serde::Serialize;
use uuid::Uuid;

use crate::db::prepared::{column, sql, BindList, Sql};
use crate::db::rows_insert::RowsInsert;

#[derive(Debug, Clone)]
pub struct NewUsage {
    pub user_id: Uuid,
    pub conversation_id: Option<Uuid>,
    pub message_id: Option<Uuid>,
    /// The catalogue model that answered.
    pub model: String,
    /// When a fallback answered: the model asked for, and why it did not answer.
    pub fallback_from: Option<String>,
    pub fallback_reason: Option<String>,
    /// Every prompt token, cached or not.
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Of the input, read from / written to the provider's prompt cache.
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    /// Tokens charged to the token budget.
    pub charged: i64,
    /// What the call cost at the model's price, and in what currency (none: unpriced).
    pub cost: Option<(Decimal, String)>,
}

/// Inserts the rows with one statement of fixed text (prepared once per connection); the
/// future does not borrow the connection (pipelinable).
pub fn insert_many(
    conn: &mut AsyncPgConnection,
    rows: &[NewUsage],
) -> BoxFuture<'static, QueryResult<()>> {
    crate::db::prepared::insert_rows(conn, rows, insert_rows)
}

/// The statement [`insert_many`] sends, to send it as part of another
/// ([`crate::db::prepared::Joined`]).
pub fn insert_rows(rows: &[NewUsage]) -> Sql<impl BindList + Send + 'static> {
    static INSERT: LazyLock<RowsInsert> = LazyLock::new(|| {
        RowsInsert::new(
            "usage_records",
            &[
                ("user_id", "uuid"),
                ("conversation_id", "uuid"),
                ("message_id", "uuid"),
                ("model", "text"),
                ("input_tokens", "int8"),
                ("output_tokens", "int8"),
                ("charged", "int8"),
                ("cache_read_tokens", "int8"),
                ("cache_write_tokens", "int8"),
                ("cost", "numeric"),
                ("currency", "text"),
                ("fallback_from", "text"),
                ("fallback_reason", "text"),
            ],
        )
    });
    // Raw SQL: every row in one prepared statement (fixed text, cached).
    sql(INSERT.text(rows.len()))
        .bind::<Array<SqlUuid>, _>(column(rows, |r| r.user_id))
        .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.conversation_id))
        .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.message_id))
        .bind::<Array<Text>, _>(column(rows, |r| r.model.clone()))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.input_tokens))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.output_tokens))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.charged))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.cache_read_tokens))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.cache_write_tokens))
        .bind::<Array<Nullable<Numeric>>, _>(column(rows, |r| r.cost.as_ref().map(|c| c.0)))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.cost.as_ref().map(|c| c.1.clone())))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.fallback_from.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.fallback_reason.clone()))
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
    /// Of the input, what the provider's prompt cache read and wrote.
    #[diesel(sql_type = BigInt)]
    pub cache_read_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub cache_write_tokens: i64,
    /// What the priced calls cost (null: none was priced), exact, as a decimal string.
    #[diesel(sql_type = Nullable<Numeric>)]
    #[schema(value_type = Option<String>)]
    pub cost: Option<Decimal>,
    #[diesel(sql_type = Nullable<Text>)]
    pub currency: Option<String>,
}

/// Tokens per user and model between `from` (inclusive) and `to` (exclusive, open if None);
/// a deleted account keeps its rows, named from its tombstone.
pub async fn by_user_and_model(
    conn: &mut AsyncPgConnection,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> QueryResult<Vec<UserModelUsage>> {
    // Raw SQL: grouped sums with COALESCE over two left joins (a deleted user's name).
    diesel::sql_query(
        "SELECT r.user_id, \
                COALESCE(u.username, d.username || ' (deleted)', 'deleted user') AS username, \
                r.model, sum(r.input_tokens)::BIGINT AS input_tokens, \
                sum(r.output_tokens)::BIGINT AS output_tokens, count(*)::BIGINT AS calls, \
                sum(r.cache_read_tokens)::BIGINT AS cache_read_tokens, \
                sum(r.cache_write_tokens)::BIGINT AS cache_write_tokens, \
                sum(r.cost) AS cost, r.currency \
         FROM usage_records r LEFT JOIN users u ON u.id = r.user_id \
              LEFT JOIN deleted_users d ON d.id = r.user_id \
         WHERE r.created_at >= $1 AND ($2::timestamptz IS NULL OR r.created_at < $2) \
         GROUP BY r.user_id, 2, r.model, r.currency ORDER BY 2, r.model, r.currency",
    )
    .bind::<Timestamptz, _>(from)
    .bind::<Nullable<Timestamptz>, _>(to)
    .load(conn)
    .await
}

/// Tokens and cost of the chats and `/v1` calls run with one assistant.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct AssistantUsage {
    #[diesel(sql_type = SqlUuid)]
    pub assistant_id: Uuid,
    #[diesel(sql_type = Text)]
    pub assistant: String,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub calls: i64,
    #[diesel(sql_type = BigInt)]
    pub users: i64,
    #[diesel(sql_type = Nullable<Numeric>)]
    #[schema(value_type = Option<String>)]
    pub cost: Option<Decimal>,
    #[diesel(sql_type = Nullable<Text>)]
    pub currency: Option<String>,
}

/// Usage per assistant between `from` and `to` (the conversations started with one).
pub async fn by_assistant(
    conn: &mut AsyncPgConnection,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> QueryResult<Vec<AssistantUsage>> {
    // Raw SQL: grouped sums and count(DISTINCT …), the DSL has no GROUP BY aggregates for it.
    diesel::sql_query(
        "SELECT a.id AS assistant_id, a.name AS assistant, \
                sum(r.input_tokens)::BIGINT AS input_tokens, \
                sum(r.output_tokens)::BIGINT AS output_tokens, count(*)::BIGINT AS calls, \
                count(DISTINCT r.user_id)::BIGINT AS users, sum(r.cost) AS cost, r.currency \
         FROM usage_records r JOIN conversations c ON c.id = r.conversation_id \
              JOIN assistants a ON a.id = c.assistant_id \
         WHERE r.created_at >= $1 AND ($2::timestamptz IS NULL OR r.created_at < $2) \
         GROUP BY a.id, a.name, r.currency ORDER BY a.name, r.currency",
    )
    .bind::<Timestamptz, _>(from)
    .bind::<Nullable<Timestamptz>, _>(to)
    .load(conn)
    .await
}
