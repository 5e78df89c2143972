//! Messages of a conversation: user prompts, assistant replies (with their tool calls) and
//! tool results, in insertion order.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{self, BoxFuture, FutureExt};
use serde::Serialize;
use uuid::Uuid;

use crate::db::schema::messages::{self, dsl};

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = messages)]
pub struct Message {
    pub id: Uuid,
    #[serde(skip)]
    pub seq: i64,
    #[serde(skip)]
    pub conversation_id: Uuid,
    pub role: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    pub created_at: DateTime<Utc>,
}

/// A message to store.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = messages)]
pub struct NewMessage {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub role: String,
    pub content: String,
    pub tool_calls: Option<serde_json::Value>,
    pub tool_call_id: Option<String>,
    pub status: String,
    pub status_reason: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub duration_ms: Option<i64>,
}

impl NewMessage {
    /// A copy Postgres accepts whatever the model produced (see [`crate::db::pg_safe_text`]).
    fn pg_safe(&self) -> NewMessage {
        use crate::db::{pg_safe_json, pg_safe_text};
        NewMessage {
            content: pg_safe_text(&self.content).into_owned(),
            tool_calls: self.tool_calls.as_ref().map(pg_safe_json),
            tool_call_id: self
                .tool_call_id
                .as_deref()
                .map(|s| pg_safe_text(s).into_owned()),
            model: self.model.as_deref().map(|s| pg_safe_text(s).into_owned()),
            ..self.clone()
        }
    }
}

/// All messages of a conversation in the order they were written. Callers check ownership
/// of the conversation first.
/// The whole history, oldest first. Like the other statements of an agent turn, the future
/// does not borrow the connection, so a transaction can pipeline it with others.
pub fn list(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
) -> BoxFuture<'static, QueryResult<Vec<Message>>> {
    dsl::messages
        .filter(dsl::conversation_id.eq(conversation_id))
        .order(dsl::seq.asc())
        .select(Message::as_select())
        .load(conn)
        .boxed()
}

/// Inserts the rows in one statement (pipelinable, see [`list`]).
pub fn insert_many(
    conn: &mut AsyncPgConnection,
    rows: &[NewMessage],
) -> BoxFuture<'static, QueryResult<()>> {
    if rows.is_empty() {
        return future::ready(Ok(())).boxed();
    }
    let rows: Vec<NewMessage> = rows.iter().map(NewMessage::pg_safe).collect();
    diesel::insert_into(dsl::messages)
        .values(rows)
        .execute(conn)
        .map(|r| r.map(|_| ()))
        .boxed()
}
