//! What a turn's start reads about its user, in one statement of its first round trip: the
//! account and its role (as [`super::access::access`] reads them for a step), the personal
//! key a `/v1` call came with, the admin's custom tools, the conversation's assistant and
//! the user's memory notes ([`super::preset`]), and (a start's, not a resume's) the user's
//! token period row, locked ([`budget_early`]). One statement where there were five: each
//! costs the server its building, binding and decoding, and Postgres its executor start-up
//! and a reply of its own, on every turn (issue 43).
//!
//! The period row is the start's first budget lock, so the statement is sent after the
//! claim: the conversation row first, as everywhere ([`crate::turn::sql`]).

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::budget::Period;
use crate::db::models::api_key::KeyState;
use crate::db::models::budget_early::{self, Locked};
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
    /// The user's token period row, locked until the transaction ends, when a lock was asked
    /// for; `None` also for an unlimited budget or a period without its row yet.
    pub(super) early: Option<Locked>,
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
    /// The locked period row: what it had left, its name and start (NULL: none locked).
    #[diesel(sql_type = Nullable<BigInt>)]
    locked_left: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    locked_period: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    locked_start: Option<DateTime<Utc>>,
}

/// The inputs of `user`'s turn in `conversation` (or, for a conversation the start creates,
/// with `assistant`); memory notes only when `with_memory`; the state of `api_key` when the
/// turn came with one; with `lock_at`, the user's token period containing that instant,
/// locked as [`budget_early`] describes. Pipelinable.
pub(super) fn read(
    conn: &mut AsyncPgConnection,
    conversation: Uuid,
    user: Uuid,
    assistant: Option<Uuid>,
    with_memory: bool,
    api_key: Option<Uuid>,
    lock_at: Option<DateTime<Utc>>,
) -> BoxFuture<'static, QueryResult<Option<StartInputs>>> {
    // Without a lock the period subquery's one-time filter is false: it reads and locks
    // nothing (the starts bound then are never compared).
    let at = lock_at.unwrap_or(DateTime::UNIX_EPOCH);
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
                   FROM api_keys k WHERE k.id = $5) AS key_expired, \
                p.left AS locked_left, p.period AS locked_period, \
                p.period_start AS locked_start \
           FROM u \
           JOIN roles r ON r.name = u.role \
           LEFT JOIN assistants a ON a.id = coalesce($3, (SELECT assistant_id FROM c)) \
           LEFT JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version \
           LEFT JOIN LATERAL ( \
               SELECT coalesce(u.token_budget, r.token_budget) - b.spent - b.reserved AS left, \
                      b.period, b.period_start \
                 FROM budget_periods b \
                WHERE $6 AND coalesce(u.token_budget, r.token_budget) IS NOT NULL \
                  AND b.user_id = $2 AND b.period = r.budget_period \
                  AND b.period_start = CASE r.budget_period WHEN 'day' THEN $7 \
                          WHEN 'week' THEN $8 WHEN 'month' THEN $9 WHEN 'total' THEN $10 END \
                FOR NO KEY UPDATE OF b) p ON true",
    )
    .bind::<SqlUuid, _>(conversation)
    .bind::<SqlUuid, _>(user)
    .bind::<Nullable<SqlUuid>, _>(assistant)
    .bind::<Bool, _>(with_memory)
    .bind::<Nullable<SqlUuid>, _>(api_key)
    .bind::<Bool, _>(lock_at.is_some())
    .bind::<Timestamptz, _>(Period::Day.start(at))
    .bind::<Timestamptz, _>(Period::Week.start(at))
    .bind::<Timestamptz, _>(Period::Month.start(at))
    .bind::<Timestamptz, _>(Period::Total.start(at))
    .load::<Row>(conn)
    .map(move |rows| {
        let Some(row) = rows?.into_iter().next() else {
            return Ok(None);
        };
        // Written by the statement above from the table's own columns: a row that does not
        // decode is a schema mismatch, reported as the database error it is.
        let custom_tools = serde_json::from_value(row.custom_tools)
            .map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))?;
        let early = budget_early::locked(row.locked_left, row.locked_period, row.locked_start);
        Ok(Some(StartInputs {
            access: row.access,
            key: match api_key {
                Some(_) => KeyState::from_expired(row.key_expired),
                None => KeyState::Valid,
            },
            preset: row.preset.preset(),
            custom_tools,
            early,
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
    let read = read(conn, conversation, user, None, with_memory, None, None).await?;
    Ok(read.map(|i| ResumeInputs {
        account: i.access.account(),
        role: i.access.role_now(),
        preset: i.preset,
        custom_tools: i.custom_tools,
    }))
}
