//! What a turn's start reads beside the role, in the same round trip: the conversation's
//! assistant at its current version (and whether the user may still use it) and the user's
//! memory notes, when memory is on for the user and the conversation.

use diesel::sql_types::{Array, Bool, Int4, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::assistants::AssistantParams;
use crate::db::prepared::sql;

/// The assistant and memory a turn applies.
#[derive(Debug, Clone, Default)]
pub struct TurnPreset {
    pub assistant: Option<AssistantPreset>,
    /// The user's notes, oldest first (empty while memory is off).
    pub memory: Vec<String>,
}

/// An assistant as a turn applies it.
#[derive(Debug, Clone)]
pub struct AssistantPreset {
    pub id: Uuid,
    pub name: String,
    pub version: i32,
    pub instructions: String,
    /// `None`: the conversation's (or the server's default) model.
    pub model: Option<String>,
    /// The allowlist the role's is narrowed to.
    pub tools: Vec<String>,
    pub params: AssistantParams,
    /// Not retired, and visible to the user's role now.
    pub usable: bool,
}

/// The most one answer may hold: the model's cap `model_max`, lowered by the assistant's.
pub fn output_cap(assistant: Option<&AssistantPreset>, model_max: u32) -> u32 {
    assistant
        .and_then(|a| a.params.max_output_tokens)
        .map_or(model_max, |cap| cap.min(model_max))
}

/// The preset's columns, as [`read`] and [`crate::turn::sql::inputs`] select them.
#[derive(QueryableByName)]
pub(super) struct Row {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    assistant_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<Int4>)]
    version: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    instructions: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    model: Option<String>,
    #[diesel(sql_type = Nullable<Array<Text>>)]
    #[diesel(column_name = assistant_tools)]
    tools: Option<Vec<String>>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    params: Option<serde_json::Value>,
    #[diesel(sql_type = Bool)]
    usable: bool,
    #[diesel(sql_type = Array<Text>)]
    memory: Vec<String>,
}

impl Row {
    pub(super) fn preset(self) -> TurnPreset {
        let assistant = match (self.assistant_id, self.version) {
            (Some(id), Some(version)) => Some(AssistantPreset {
                id,
                name: self.name.unwrap_or_default(),
                version,
                instructions: self.instructions.unwrap_or_default(),
                model: self.model,
                tools: self.tools.unwrap_or_default(),
                params: self
                    .params
                    .and_then(|p| serde_json::from_value(p).ok())
                    .unwrap_or_default(),
                usable: self.usable,
            }),
            _ => None,
        };
        TurnPreset {
            assistant,
            memory: self.memory,
        }
    }
}

/// The preset of `user`'s conversation `conversation` (or, for a conversation the start
/// creates, of `assistant`); memory only when `with_memory`.
pub fn read(
    conn: &mut AsyncPgConnection,
    conversation: Uuid,
    user: Uuid,
    assistant: Option<Uuid>,
    with_memory: bool,
) -> BoxFuture<'static, QueryResult<TurnPreset>> {
    sql(
        "WITH u AS (SELECT id, role, memory_enabled FROM users WHERE id = $2), \
              c AS (SELECT assistant_id, memory_enabled FROM conversations \
                     WHERE id = $1 AND user_id = $2) \
         SELECT a.id AS assistant_id, v.name, a.version, v.instructions, v.model, \
                v.tools AS assistant_tools, \
                v.params, \
                (a.id IS NOT NULL AND a.retired_at IS NULL \
                 AND (cardinality(v.visible_to_roles) = 0 OR u.role = ANY(v.visible_to_roles))) \
                  AS usable, \
                CASE WHEN $4 AND u.memory_enabled \
                          AND coalesce((SELECT memory_enabled FROM c), true) \
                     THEN coalesce((SELECT array_agg(m.text ORDER BY m.created_at, m.id) \
                                      FROM memory_notes m WHERE m.user_id = $2), '{}') \
                     ELSE '{}'::text[] END AS memory \
           FROM u \
           LEFT JOIN assistants a ON a.id = coalesce($3, (SELECT assistant_id FROM c)) \
           LEFT JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version",
    )
    .bind::<SqlUuid, _>(conversation)
    .bind::<SqlUuid, _>(user)
    .bind::<Nullable<SqlUuid>, _>(assistant)
    .bind::<Bool, _>(with_memory)
    .load::<Row>(conn)
    .map(|rows| rows.map(|r| r.into_iter().next().map(Row::preset).unwrap_or_default()))
    .boxed()
}
