//! Which assistant messages a fallback model answered, from what and why: read from the
//! usage rows the turn wrote (`fallback_from`, `fallback_reason`), for the conversation
//! JSON, its export and the browser.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// The model asked for, and why it did not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct Fallback {
    #[serde(skip)]
    #[diesel(sql_type = SqlUuid)]
    pub message_id: Uuid,
    #[diesel(sql_type = Text)]
    pub from: String,
    #[diesel(sql_type = Text)]
    pub reason: String,
}

/// The fallbacks among `messages` (ids), by message.
pub async fn of_messages(
    conn: &mut AsyncPgConnection,
    messages: &[Uuid],
) -> diesel::QueryResult<HashMap<Uuid, Fallback>> {
    if messages.is_empty() {
        return Ok(HashMap::new());
    }
    // Raw SQL: DISTINCT ON, which the DSL cannot say with this ordering.
    let rows: Vec<Fallback> = diesel::sql_query(
        "SELECT DISTINCT ON (message_id) message_id, fallback_from AS \"from\", \
                COALESCE(fallback_reason, '') AS reason \
           FROM usage_records WHERE message_id = ANY($1) AND fallback_from IS NOT NULL \
          ORDER BY message_id, id",
    )
    .bind::<Array<SqlUuid>, _>(messages)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|f| (f.message_id, f)).collect())
}

/// Adds `fallback: {from, reason}` to each message (a JSON object with an `id`) in `map`.
pub fn annotate(message: &mut Value, map: &HashMap<Uuid, Fallback>) {
    let id = message
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Uuid>().ok());
    if let Some(f) = id.and_then(|id| map.get(&id)) {
        message["fallback"] = serde_json::json!({ "from": f.from, "reason": f.reason });
    }
}

/// The calls a fallback answered in a period: per model, the one it stood in for and why.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct FallbackUsage {
    /// The catalogue model that answered.
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = Text)]
    pub from: String,
    #[diesel(sql_type = Text)]
    pub reason: String,
    #[diesel(sql_type = BigInt)]
    pub calls: i64,
    #[diesel(sql_type = BigInt)]
    pub input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    pub output_tokens: i64,
}

/// The fallback lines between `from` (inclusive) and `to` (exclusive, open if None).
pub async fn in_period(
    conn: &mut AsyncPgConnection,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> diesel::QueryResult<Vec<FallbackUsage>> {
    // Raw SQL: grouped sums with COALESCE.
    diesel::sql_query(
        "SELECT model, fallback_from AS \"from\", COALESCE(fallback_reason, '') AS reason, \
                count(*)::BIGINT AS calls, sum(input_tokens)::BIGINT AS input_tokens, \
                sum(output_tokens)::BIGINT AS output_tokens \
           FROM usage_records \
          WHERE fallback_from IS NOT NULL AND created_at >= $1 \
            AND ($2::timestamptz IS NULL OR created_at < $2) \
          GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .bind::<Timestamptz, _>(from)
    .bind::<Nullable<Timestamptz>, _>(to)
    .load(conn)
    .await
}
