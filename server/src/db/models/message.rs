//! Messages of a conversation: user prompts, assistant replies (with their tool calls) and
//! tool results, in insertion order.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use serde::Serialize;
use uuid::Uuid;

use crate::db::prepared::{column, sql, BindList, Sql};
use crate::db::rows_insert::RowsInsert;
use crate::db::schema::messages::{self, dsl};
use crate::db::{pg_safe_json, pg_safe_text};
use crate::domain::{tokens, MessageRole, MessageStatus};

#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = messages)]
pub struct Message {
    pub id: Uuid,
    #[serde(skip)]
    pub seq: i64,
    #[serde(skip)]
    pub conversation_id: Uuid,
    pub role: MessageRole,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The workspace files a user message was sent with ([`crate::domain::Attachment`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::domain::Attachment>>)]
    pub attachments: Option<serde_json::Value>,
    pub status: MessageStatus,
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
    /// The passages an assistant answer cites (`crate::knowledge::citations::Citation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub citations: Option<serde_json::Value>,
}

/// A message to store.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub role: MessageRole,
    pub content: String,
    pub tool_calls: Option<serde_json::Value>,
    pub tool_call_id: Option<String>,
    pub attachments: Option<serde_json::Value>,
    /// Set on a final answer that cites knowledge passages.
    pub citations: Option<serde_json::Value>,
    pub status: MessageStatus,
    pub status_reason: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub duration_ms: Option<i64>,
}

impl NewMessage {
    /// A complete message with a fresh id and no tool call, model or usage (a user prompt).
    pub fn complete(conversation_id: Uuid, role: MessageRole, content: &str) -> Self {
        Self {
            id: Uuid::new_v4(),
            conversation_id,
            role,
            content: content.into(),
            tool_calls: None,
            tool_call_id: None,
            attachments: None,
            citations: None,
            status: MessageStatus::Complete,
            status_reason: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            duration_ms: None,
        }
    }

    /// A model's complete answer (fresh id) by the catalogue model `model`; its tool calls,
    /// citations and usage are the caller's to add.
    pub fn answer(conversation_id: Uuid, content: String, model: String, duration_ms: i64) -> Self {
        Self {
            content,
            model: Some(model),
            duration_ms: Some(duration_ms),
            ..Self::complete(conversation_id, MessageRole::Assistant, "")
        }
    }

    /// A tool's result for the call `tool_call_id` (fresh id); `error_code` names a failure.
    pub fn tool_result(
        conversation_id: Uuid,
        tool_call_id: String,
        content: String,
        error_code: Option<&str>,
        duration_ms: i64,
    ) -> Self {
        Self {
            content,
            tool_call_id: Some(tool_call_id),
            status_reason: error_code.map(str::to_owned),
            duration_ms: Some(duration_ms),
            ..Self::complete(conversation_id, MessageRole::Tool, "")
        }
    }
}

/// All messages of a conversation in the order they were written, oldest first. Callers
/// check ownership of the conversation first.
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

/// The first question of a conversation and the first answer with text (what its title is
/// made from), each cut to `max_chars` characters. Callers check ownership first.
pub async fn first_exchange(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    max_chars: i32,
) -> QueryResult<(Option<FirstQuestion>, Option<String>)> {
    // Files alone are a question too (their text is empty).
    let question = dsl::messages
        .filter(dsl::conversation_id.eq(conversation_id))
        .filter(dsl::role.eq(MessageRole::User))
        .filter(dsl::content.ne("").or(dsl::attachments.is_not_null()))
        .order(dsl::seq.asc())
        .select((left(dsl::content, max_chars), dsl::attachments))
        .first::<(String, Option<serde_json::Value>)>(conn)
        .await
        .optional()?
        .map(|(text, attachments)| FirstQuestion { text, attachments });
    let answer = first_of(conn, conversation_id, MessageRole::Assistant, max_chars).await?;
    Ok((question, answer))
}

/// The first user message of a conversation: its text (cut) and its attachments column.
#[derive(Debug)]
pub struct FirstQuestion {
    pub text: String,
    pub attachments: Option<serde_json::Value>,
}

async fn first_of(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    role: MessageRole,
    max_chars: i32,
) -> QueryResult<Option<String>> {
    dsl::messages
        .filter(dsl::conversation_id.eq(conversation_id))
        .filter(dsl::role.eq(role))
        .filter(dsl::content.ne(""))
        .order(dsl::seq.asc())
        .select(left(dsl::content, max_chars))
        .first::<String>(conn)
        .await
        .optional()
}

diesel::define_sql_function!(
    /// SQL `left(text, n)`: the first `n` characters.
    fn left(x: Text, n: Integer) -> Text
);

/// The least `content` stored with `role` can cost in the model's context window: the
/// assembly must never lose a message to the cut, so this never exceeds what it counts. A
/// user message costs its text and overhead; an assistant message at least that (its tool
/// calls may be left out, and an empty one may be left out whole); a tool result may be an
/// orphan the assembly drops, so nothing.
pub fn history_cost_floor(role: MessageRole, content: &str) -> i32 {
    let cost = match role {
        MessageRole::Tool => 0,
        MessageRole::Assistant if content.is_empty() => 0,
        _ => tokens::MESSAGE_OVERHEAD_TOKENS + tokens::estimate_tokens(content),
    };
    i32::try_from(cost).unwrap_or(i32::MAX)
}

/// Inserts the rows, in order, with one statement of fixed text (prepared once per
/// connection; pipelinable, see [`list`]): each column goes as one array parameter.
pub fn insert_many(
    conn: &mut AsyncPgConnection,
    rows: &[NewMessage],
) -> BoxFuture<'static, QueryResult<()>> {
    crate::db::prepared::insert_rows(conn, rows, insert_rows)
}

/// The statement [`insert_many`] sends, to send it as part of another
/// ([`crate::db::prepared::Joined`]).
pub fn insert_rows(rows: &[NewMessage]) -> Sql<impl BindList + Send + 'static> {
    // Postgres must accept whatever the model produced (see `pg_safe_text`).
    let text = |s: &String| pg_safe_text(s).into_owned();
    let opt_text = |s: &Option<String>| s.as_deref().map(|s| pg_safe_text(s).into_owned());
    static INSERT: LazyLock<RowsInsert> = LazyLock::new(|| {
        RowsInsert::new(
            "messages",
            &[
                ("id", "uuid"),
                ("conversation_id", "uuid"),
                ("role", "text"),
                ("content", "text"),
                ("tool_calls", "jsonb"),
                ("tool_call_id", "text"),
                ("status", "text"),
                ("status_reason", "text"),
                ("model", "text"),
                ("input_tokens", "int8"),
                ("output_tokens", "int8"),
                ("duration_ms", "int8"),
                ("history_cost", "int4"),
                ("attachments", "jsonb"),
                ("citations", "jsonb"),
            ],
        )
    });
    // Raw SQL: every row in one prepared statement (fixed text, cached).
    sql(INSERT.text(rows.len()))
        .bind::<Array<SqlUuid>, _>(column(rows, |r| r.id))
        .bind::<Array<SqlUuid>, _>(column(rows, |r| r.conversation_id))
        .bind::<Array<Text>, _>(column(rows, |r| r.role))
        .bind::<Array<Text>, _>(column(rows, |r| text(&r.content)))
        .bind::<Array<Nullable<Jsonb>>, _>(column(rows, |r| {
            r.tool_calls.as_ref().map(pg_safe_json)
        }))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| opt_text(&r.tool_call_id)))
        .bind::<Array<Text>, _>(column(rows, |r| r.status))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| opt_text(&r.status_reason)))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| opt_text(&r.model)))
        .bind::<Array<Nullable<BigInt>>, _>(column(rows, |r| r.input_tokens))
        .bind::<Array<Nullable<BigInt>>, _>(column(rows, |r| r.output_tokens))
        .bind::<Array<Nullable<BigInt>>, _>(column(rows, |r| r.duration_ms))
        .bind::<Array<Integer>, _>(column(rows, |r| {
            history_cost_floor(r.role, &pg_safe_text(&r.content))
        }))
        .bind::<Array<Nullable<Jsonb>>, _>(column(rows, |r| {
            r.attachments.as_ref().map(pg_safe_json)
        }))
        .bind::<Array<Nullable<Jsonb>>, _>(column(rows, |r| r.citations.as_ref().map(pg_safe_json)))
}

/// Which of these message ids are stored (after a commit whose answer was lost).
pub async fn existing(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<Vec<Uuid>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    messages::table
        .filter(messages::id.eq_any(ids.to_vec()))
        .select(messages::id)
        .load(conn)
        .await
}

/// What [`truncate_from`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncated {
    /// This many messages (the named one and everything after it) are gone.
    Removed(usize),
    /// No user message of that id in the conversation.
    NoSuchMessage,
    /// A turn runs in the conversation, or waits for an approval: nothing was touched.
    Busy,
}

/// Removes the user message `from` and everything after it, so that the conversation can go
/// on from there with an edited or regenerated question. Only while no turn runs (the check
/// and the delete are one statement); tool-call audit rows stay, as audit does.
pub async fn truncate_from(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    from: Uuid,
) -> QueryResult<Truncated> {
    #[derive(QueryableByName)]
    struct Outcome {
        #[diesel(sql_type = Nullable<BigInt>)]
        target: Option<i64>,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        idle: bool,
        #[diesel(sql_type = BigInt)]
        removed: i64,
    }
    // Raw SQL: CTEs that lock, check and delete in one statement.
    let row: Outcome = diesel::sql_query(
        "WITH target AS (SELECT seq FROM messages \
                          WHERE id = $2 AND conversation_id = $1 AND role = 'user'), \
              idle AS (SELECT 1 FROM conversations \
                        WHERE id = $1 AND active_turn_id IS NULL \
                          AND NOT EXISTS (SELECT 1 FROM approvals a \
                                           WHERE a.conversation_id = $1 \
                                             AND a.resumed_at IS NULL) \
                        FOR UPDATE), \
              gone AS (DELETE FROM messages \
                        WHERE conversation_id = $1 \
                          AND seq >= (SELECT seq FROM target) \
                          AND EXISTS (SELECT 1 FROM idle) \
                       RETURNING 1) \
         SELECT (SELECT seq FROM target) AS target, EXISTS (SELECT 1 FROM idle) AS idle, \
                (SELECT count(*) FROM gone) AS removed",
    )
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(from)
    .get_result(conn)
    .await?;
    Ok(match (row.target, row.idle) {
        (None, _) => Truncated::NoSuchMessage,
        (Some(_), false) => Truncated::Busy,
        (Some(_), true) => Truncated::Removed(usize::try_from(row.removed).unwrap_or(0)),
    })
}
