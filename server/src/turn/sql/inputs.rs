//! What a turn's start reads about its user, in one statement of its first round trip: the
//! account and its role (as [`super::access::access`] reads them for a step), the personal
//! key a `/v1` call came with, the admin's custom tools, the conversation's assistant and
//! the user's memory notes ([`super::preset`]). One statement where there were four: each
//! costs the server its building, binding and decoding, and Postgres its executor start-up,
//! on every turn (issue 43).

use diesel::sql_types::{Bool, Jsonb, Nullable, Uuid as SqlUuid};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::api_key::KeyState;
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::user::AuthState;
use crate::db::prepared::sql;
use crate::turn::sql::access::{Access, RoleNow};
use crate::turn::sql::preset::{self, TurnPreset};

/// The start's inputs; `None` from [`read`] when the account is gone.
pub(super) struct StartInputs {
    pub(super) access: Access,
    /// The personal key the turn was started with, as it is now (`Valid` without one).
    pub(super) key: KeyState,
    pub(super) preset: TurnPreset,
    /// Every custom tool, by name (the registry is built from all of them and kept:
    /// [`crate::turn::tool_set`]).
    pub(super) custom_tools: Vec<CustomToolRow>,
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(embed)]
    access: Access,
    #[diesel(embed)]
    preset: preset::Row,
    #[diesel(sql_type = Jsonb)]
    custom_tools: serde_json::Value,
    /// Whether the key is expired; NULL when there is no such key (or none was asked for).
    #[diesel(sql_type = Nullable<Bool>)]
    key_expired: Option<bool>,
}

/// The inputs of `user`'s turn in `conversation` (or, for a conversation the start creates,
/// with `assistant`); memory notes only when `with_memory`; the state of `api_key` when the
/// turn came with one. Pipelinable.
pub(super) fn read(
    conn: &mut AsyncPgConnection,
    conversation: Uuid,
    user: Uuid,
    assistant: Option<Uuid>,
    with_memory: bool,
    api_key: Option<Uuid>,
) -> BoxFuture<'static, QueryResult<Option<StartInputs>>> {
    sql(
        "WITH u AS (SELECT id, username, role, disabled, token_version, token_budget, \
                           memory_enabled \
                      FROM users WHERE id = $2), \
              c AS (SELECT assistant_id, memory_enabled FROM conversations \
                     WHERE id = $1 AND user_id = $2) \
         SELECT u.username, u.role, u.disabled, u.token_version, r.tools, r.models, \
                r.approvals, u.token_budget AS user_budget, r.token_budget AS role_budget, \
                r.budget_period, r.budget_amount, r.budget_currency, \
                (SELECT coalesce(jsonb_agg(t ORDER BY t.name), '[]') FROM custom_tools t) \
                  AS custom_tools, \
                a.id AS assistant_id, v.name, a.version, v.instructions, v.model, \
                v.tools AS assistant_tools, v.params, \
                (a.id IS NOT NULL AND a.retired_at IS NULL \
                 AND (cardinality(v.visible_to_roles) = 0 OR u.role = ANY(v.visible_to_roles))) \
                  AS usable, \
                CASE WHEN $4 AND u.memory_enabled \
                          AND coalesce((SELECT memory_enabled FROM c), true) \
                     THEN coalesce((SELECT array_agg(m.text ORDER BY m.created_at, m.id) \
                                      FROM memory_notes m WHERE m.user_id = $2), '{}') \
                     ELSE '{}'::text[] END AS memory, \
                (SELECT (k.expires_at IS NOT NULL AND k.expires_at <= now()) \
                   FROM api_keys k WHERE k.id = $5) AS key_expired \
           FROM u \
           JOIN roles r ON r.name = u.role \
           LEFT JOIN assistants a ON a.id = coalesce($3, (SELECT assistant_id FROM c)) \
           LEFT JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version",
    )
    .bind::<SqlUuid, _>(conversation)
    .bind::<SqlUuid, _>(user)
    .bind::<Nullable<SqlUuid>, _>(assistant)
    .bind::<Bool, _>(with_memory)
    .bind::<Nullable<SqlUuid>, _>(api_key)
    .load::<Row>(conn)
    .map(move |rows| {
        let Some(row) = rows?.into_iter().next() else {
            return Ok(None);
        };
        // Written by the statement above from the table's own columns: a row that does not
        // decode is a schema mismatch, reported as the database error it is.
        let custom_tools = serde_json::from_value(row.custom_tools)
            .map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))?;
        Ok(Some(StartInputs {
            access: row.access,
            key: match api_key {
                Some(_) => KeyState::from_expired(row.key_expired),
                None => KeyState::Valid,
            },
            preset: row.preset.preset(),
            custom_tools,
        }))
    })
    .boxed()
}

/// What a turn resumed after its approvals applies, read as a start reads it ([`read`]).
pub struct ResumeInputs {
    pub account: AuthState,
    pub role: RoleNow,
    pub preset: TurnPreset,
    pub custom_tools: Vec<CustomToolRow>,
}

/// The inputs of `user`'s turn in `conversation` as it resumes (memory notes only when
/// `with_memory`): one statement, on the resuming connection. `None`: the account is gone.
pub async fn read_for_resume(
    conn: &mut AsyncPgConnection,
    conversation: Uuid,
    user: Uuid,
    with_memory: bool,
) -> QueryResult<Option<ResumeInputs>> {
    let read = read(conn, conversation, user, None, with_memory, None).await?;
    Ok(read.map(|i| ResumeInputs {
        account: i.access.account(),
        role: i.access.role_now(),
        preset: i.preset,
        custom_tools: i.custom_tools,
    }))
}
