//! What a turn's start reads about its user, in one statement of its first round trip: the
//! account and its role (as [`super::access::access`] reads them for a step), the personal
//! key a `/v1` call came with, the admin's custom tools, the conversation's assistant and
//! the user's memory notes ([`super::preset`]); and for a start (not a resume) its claim on
//! the conversation ([`super::claim`]) and the user's token period row, locked
//! ([`budget_early`]). One statement where there were six: each costs the server its
//! building, binding and decoding, and Postgres its executor start-up and a reply of its
//! own, on every turn (issue 43).
//!
//! The conversation row is locked before the budget's, as everywhere ([`crate::turn::sql`]):
//! the period's lock waits for the claim (`EXISTS (SELECT 1 FROM cl)`, which runs the claim's
//! update first) and is not taken when nothing was claimed.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{QueryResult, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::budget::Period;
use crate::db::models::api_key::KeyState;
use crate::db::models::budget_early::{self, Locked};
use crate::db::models::conversation::{Conversation, DEFAULT_TITLE};
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::user::AuthState;
use crate::db::prepared::sql;
use crate::turn::sql::access::{Access, RoleNow};
use crate::turn::sql::claim::{claim_cte, claimed_columns, ClaimAsk, Claimed};
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
    /// for; `None` also for an unlimited budget or a period without its row yet, or when a
    /// claim was asked for and nothing was claimed.
    pub(super) early: Option<Locked>,
    /// The conversation claimed, when a claim was asked for and it was free.
    pub(super) claimed: Option<Conversation>,
}

/// What [`read`] reads, for `user`'s turn in `conversation`.
pub(super) struct InputsAsk {
    pub(super) conversation: Uuid,
    pub(super) user: Uuid,
    /// The assistant of a conversation the start creates (an existing one's is read).
    pub(super) assistant: Option<Uuid>,
    /// Whether the memory notes go in (chats, not `/v1` calls).
    pub(super) with_memory: bool,
    /// The personal key a `/v1` call came with.
    pub(super) api_key: Option<Uuid>,
    /// Lock the user's token period containing this instant.
    pub(super) lock_at: Option<DateTime<Utc>>,
    /// Claim the conversation first.
    pub(super) claim: Option<ClaimAsk>,
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
    #[diesel(embed)]
    claimed: Claimed,
}

/// The inputs `ask` names: the state of its key when the turn came with one; with `lock_at`,
/// the user's token period containing that instant, locked as [`budget_early`] describes;
/// with `claim`, the conversation claimed first. Pipelinable.
pub(super) fn read(
    conn: &mut AsyncPgConnection,
    ask: InputsAsk,
) -> BoxFuture<'static, QueryResult<Option<StartInputs>>> {
    let InputsAsk {
        conversation,
        user,
        assistant,
        with_memory,
        api_key,
        lock_at,
        claim,
    } = ask;
    // Without a lock the period subquery's filter is false, and without a claim the
    // claim's: each then reads and locks nothing, and the values bound for it are never
    // compared.
    let at = lock_at.unwrap_or(DateTime::UNIX_EPOCH);
    let claiming = claim.is_some();
    let claim = claim.unwrap_or(ClaimAsk {
        turn_id: Uuid::nil(),
        stale: DateTime::UNIX_EPOCH,
        process_id: Uuid::nil(),
        provisional_title: String::new(),
    });
    sql(concat!(
        "WITH ",
        claim_cte!(),
        ", u AS (SELECT id, username, role, disabled, token_version, token_budget, \
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
                p.period_start AS locked_start, ",
        claimed_columns!(),
        " FROM u \
           JOIN roles r ON r.name = u.role \
           LEFT JOIN assistants a ON a.id = coalesce($3, (SELECT assistant_id FROM c)) \
           LEFT JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version \
           LEFT JOIN cl ON true \
           LEFT JOIN LATERAL ( \
               SELECT coalesce(u.token_budget, r.token_budget) - b.spent - b.reserved AS left, \
                      b.period, b.period_start \
                 FROM budget_periods b \
                WHERE $6 AND (NOT $11 OR EXISTS (SELECT 1 FROM cl)) \
                  AND coalesce(u.token_budget, r.token_budget) IS NOT NULL \
                  AND b.user_id = $2 AND b.period = r.budget_period \
                  AND b.period_start = CASE r.budget_period WHEN 'day' THEN $7 \
                          WHEN 'week' THEN $8 WHEN 'month' THEN $9 WHEN 'total' THEN $10 END \
                FOR NO KEY UPDATE OF b) p ON true"
    ))
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
    .bind::<Bool, _>(claiming)
    .bind::<SqlUuid, _>(claim.turn_id)
    .bind::<Timestamptz, _>(claim.stale)
    .bind::<SqlUuid, _>(claim.process_id)
    .bind::<Text, _>(DEFAULT_TITLE)
    .bind::<Text, _>(claim.provisional_title)
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
            claimed: row.claimed.conversation(),
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
    let ask = InputsAsk {
        conversation,
        user,
        assistant: None,
        with_memory,
        api_key: None,
        lock_at: None,
        claim: None,
    };
    let read = read(conn, ask).await?;
    Ok(read.map(|i| ResumeInputs {
        account: i.access.account(),
        role: i.access.role_now(),
        preset: i.preset,
        custom_tools: i.custom_tools,
    }))
}
