//! The database side of an agent turn: one transaction before the model is called (claim the
//! conversation, read its history and the user's tools, reserve budget for the first model
//! call, store the user message) and one after the turn (settle the last reservation, store
//! what the turn produced and its usage, release the claim).
//!
//! Statements that do not depend on each other are pipelined: sent together and answered
//! together, and BEGIN and COMMIT travel with them ([`crate::db::pipelined`]). Before the
//! first token that is one round trip with every read and the claim, one with the reservation
//! and the user message, and a COMMIT that overlaps the model call's opening; after the turn
//! it is a single round trip. That holds because every statement here has fixed text and is
//! prepared once per connection ([`crate::db::prepared`]): a statement diesel re-prepares
//! costs a round trip of its own.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use super::api_key::KeyState;
use super::audit::{self, NewAudit};
use super::budget::{self, Hold, Limit, Reserve, ReserveAsk};
use super::conversation::Conversation;
use super::custom_tool::{self, CustomToolRow};
use super::message::{self, Message, NewMessage};
use super::usage::{self, NewUsage};
use super::user::{AuthState, Rejection};
use crate::db::pipelined::{Committing, Pipelined};
use crate::db::prepared::sql;
use crate::db::schema::{roles::dsl as roles, users::dsl as users};

/// Who starts a turn where.
#[derive(Debug, Clone)]
pub struct Claim {
    pub user_id: Uuid,
    /// The token version the request was signed with; the account is checked in the
    /// transaction's first round trip.
    pub token_version: i32,
    pub turn_id: Uuid,
    /// A claim older than this belongs to a dead process and may be taken over.
    pub stale_after: Duration,
    /// The server process running the turn (see [`super::liveness`]).
    pub process_id: Uuid,
    /// The request's `Idempotency-Key`, recorded with the user message.
    pub idempotency: Option<super::idempotency::IdempotencyKey>,
    /// A conversation the turn creates instead of claiming an existing one.
    pub new_conversation: Option<NewConversation>,
    /// The API key a `/v1` caller used: it must still exist (not revoked) and be unexpired,
    /// and the account is checked as it is now rather than against `token_version`.
    pub api_key: Option<Uuid>,
}

/// A conversation created by its first turn (a call of the OpenAI-compatible API): inserted
/// already claimed, with the call's earlier messages, in the transaction's first round trip,
/// so the call costs the commits of a plain turn and a refused one leaves nothing behind.
/// Its id is the user message's `conversation_id`.
#[derive(Debug, Clone)]
pub struct NewConversation {
    pub title: String,
    pub model: Option<String>,
    /// Stored before the turn's new message, in order (their `conversation_id` is the new
    /// conversation's). The model input is built from the call, so nothing is read back.
    pub history: Vec<NewMessage>,
}

/// Budget wanted for the first model call.
#[derive(Debug, Clone, Copy)]
pub struct BudgetAsk {
    /// Output cap the model would get with room to spare.
    pub max_output: i64,
    /// Smallest output worth calling the model for.
    pub min_output: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: Duration,
}

/// A turn whose start is decided: everything is written but the COMMIT (and, with an
/// unlimited budget, the user message) is still to be sent. Nothing may reach the user before
/// [`Started::committing`] has succeeded; the model call may already be on its way.
pub struct Started<T> {
    pub conversation: Conversation,
    /// The account as it is now (name and role).
    pub account: AuthState,
    /// Whatever the caller built from the history (the model input).
    pub built: T,
    /// Estimated input tokens of the first call.
    pub input_estimate: i64,
    /// Tools the user's role allows right now.
    pub allowed_tools: Vec<String>,
    /// Admin-defined tools as they are now.
    pub custom_tools: Vec<CustomToolRow>,
    pub hold: Hold,
    /// The rest of the transaction; its connection is unusable until this is waited for.
    pub committing: Committing,
}

impl<T> std::fmt::Debug for Started<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("conversation", &self.conversation.id)
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

/// What starting a turn found.
pub enum Begin<T> {
    Started(Box<Started<T>>),
    /// Not the caller's conversation, or no such conversation.
    NotFound,
    /// Another turn is running in this conversation.
    Busy,
    /// The budget does not cover the first call; nothing was stored.
    Refused(Reserve),
    /// The token no longer admits its bearer; nothing was stored.
    Rejected(Rejection),
}

impl<T> std::fmt::Debug for Begin<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Begin::Started(s) => s.fmt(f),
            Begin::NotFound => f.write_str("NotFound"),
            Begin::Busy => f.write_str("Busy"),
            Begin::Refused(r) => f.debug_tuple("Refused").field(r).finish(),
            Begin::Rejected(r) => f.debug_tuple("Rejected").field(r).finish(),
        }
    }
}

/// The account as the database has it now, its role's tools and its budget rule: one
/// indexed join.
#[derive(Debug, Queryable)]
struct Access {
    username: String,
    role: String,
    disabled: bool,
    token_version: i32,
    tools: Vec<String>,
    user_budget: Option<i64>,
    role_budget: Option<i64>,
    budget_period: String,
}

impl Access {
    fn limit(&self) -> Limit {
        Limit::from_columns(self.user_budget.or(self.role_budget), &self.budget_period)
    }

    fn account(&self) -> AuthState {
        AuthState {
            username: self.username.clone(),
            role: self.role.clone(),
            disabled: self.disabled,
            token_version: self.token_version,
        }
    }
}

fn access(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
) -> BoxFuture<'static, QueryResult<Option<Access>>> {
    users::users
        .inner_join(roles::roles)
        .filter(users::id.eq(user_id))
        .select((
            users::username,
            users::role,
            users::disabled,
            users::token_version,
            roles::tools,
            users::token_budget,
            roles::token_budget,
            roles::budget_period,
        ))
        .first::<Access>(conn)
        .map(|r| r.optional())
        .boxed()
}

/// Marks the conversation as running `turn_id` unless another live turn holds it: `None`
/// when it is held, or is not the user's. A conversation still titled by default is titled
/// `provisional_title` (from its first message) until a generated title replaces it.
fn claim_conversation(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    user_id: Uuid,
    turn_id: Uuid,
    stale: DateTime<Utc>,
    process_id: Uuid,
    provisional_title: String,
) -> BoxFuture<'static, QueryResult<Option<Conversation>>> {
    sql("UPDATE conversations \
            SET active_turn_id = $3, active_turn_at = now(), updated_at = now(), \
                active_process_id = $5, archived_at = NULL, \
                title = CASE WHEN title_auto AND title = $6 THEN $7 ELSE title END \
          WHERE id = $1 AND user_id = $2 \
            AND (active_turn_id IS NULL OR active_turn_at < $4) \
            AND NOT EXISTS (SELECT 1 FROM approvals a \
                             WHERE a.conversation_id = $1 AND a.resumed_at IS NULL) \
         RETURNING id, user_id, title, model, created_at, updated_at, pinned, archived_at, \
                   system_prompt, title_auto")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(user_id)
    .bind::<SqlUuid, _>(turn_id)
    .bind::<Timestamptz, _>(stale)
    .bind::<SqlUuid, _>(process_id)
    .bind::<Text, _>(super::conversation::DEFAULT_TITLE)
    .bind::<Text, _>(provisional_title)
    .get_result(conn)
    .map(|r| r.optional())
    .boxed()
}

/// Inserts `new` as the user's conversation, claimed by `turn_id` as [`claim_conversation`]
/// would: `Some` like a granted claim.
fn create_claimed(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    user_id: Uuid,
    new: &NewConversation,
    turn_id: Uuid,
    process_id: Uuid,
) -> BoxFuture<'static, QueryResult<Option<Conversation>>> {
    // Named by the API call: no generated title replaces it.
    sql("INSERT INTO conversations \
                (id, user_id, title, model, active_turn_id, active_turn_at, active_process_id, \
                 title_auto) \
         VALUES ($1, $2, $3, $4, $5, now(), $6, false) \
         RETURNING id, user_id, title, model, created_at, updated_at, pinned, archived_at, \
                   system_prompt, title_auto")
    .bind::<SqlUuid, _>(conversation_id)
    .bind::<SqlUuid, _>(user_id)
    .bind::<Text, _>(new.title.clone())
    .bind::<Nullable<Text>, _>(new.model.clone())
    .bind::<SqlUuid, _>(turn_id)
    .bind::<SqlUuid, _>(process_id)
    .get_result(conn)
    .map(|r| r.map(Some))
    .boxed()
}

/// Checks the account, claims the conversation, reserves the first call's budget and
/// stores the user message, in one commit; nothing is kept when anything refuses. `build`
/// turns the conversation, its history (as much as could fit in `history_room` estimated tokens) and the
/// allowed tools into the model input and its estimated size in tokens.
///
/// With [`Claim::new_conversation`] the conversation and its earlier messages are inserted
/// in place of the claim and the history read.
///
/// Round trips: BEGIN with every read and the claim; then, with a limited budget, the
/// reservation and the user message. The COMMIT (with an unlimited budget, the user message
/// and the COMMIT: nothing can refuse) is left to the caller in [`Started::committing`], so
/// that its wait overlaps the model call's.
pub async fn begin<T, F>(
    conn: &mut AsyncPgConnection,
    claim: Claim,
    user_message: NewMessage,
    ask: BudgetAsk,
    history_room: u64,
    build: F,
) -> QueryResult<Begin<T>>
where
    T: Send + 'static,
    F: FnOnce(&Conversation, &[Message], &[String], &[CustomToolRow]) -> (T, i64) + Send + 'static,
{
    let Claim {
        user_id,
        token_version,
        turn_id,
        stale_after,
        process_id,
        idempotency,
        new_conversation,
        api_key,
    } = claim;
    let stale =
        ask.now - chrono::Duration::from_std(stale_after).unwrap_or(chrono::Duration::minutes(10));
    let conversation_id = user_message.conversation_id;
    let mut tx = Pipelined::open(conn);

    let account_read = access(tx.conn(), user_id);
    // Sent in this order: the earlier messages need their conversation.
    let (claim, history) = match &new_conversation {
        None => (
            claim_conversation(
                tx.conn(),
                conversation_id,
                user_id,
                turn_id,
                stale,
                process_id,
                crate::llm::title::provisional(&user_message.content),
            ),
            message::list_recent(tx.conn(), conversation_id, history_room),
        ),
        Some(new) => (
            create_claimed(
                tx.conn(),
                conversation_id,
                user_id,
                new,
                turn_id,
                process_id,
            ),
            message::insert_many(tx.conn(), &new.history)
                .map(|r| r.map(|()| Vec::new()))
                .boxed(),
        ),
    };
    let custom = custom_tool::list(tx.conn());
    let key_state = match api_key {
        Some(id) => super::api_key::state(tx.conn(), id),
        None => futures_util::future::ready(Ok(KeyState::Valid)).boxed(),
    };
    let reads = futures_util::future::try_join5(account_read, claim, history, custom, key_state);
    let (access, claimed, history, custom_tools, key_state) = match tx.begin_with(reads).await {
        Ok(read) => read,
        Err(e) => return abort_with(tx, Err(e)).await,
    };
    let Some(access) = access else {
        return abort_with(tx, Ok(Begin::Rejected(Rejection::NoAccount))).await;
    };
    let account = access.account();
    let admitted = match (api_key, key_state) {
        (Some(_), KeyState::Gone) => Err(Rejection::KeyRevoked),
        (Some(_), KeyState::Expired) => Err(Rejection::KeyExpired),
        (Some(_), KeyState::Valid) => account.admits(access.token_version),
        (None, _) => account.admits(token_version),
    };
    if let Err(r) = admitted {
        return abort_with(tx, Ok(Begin::Rejected(r))).await;
    }
    let Some(conversation) = claimed else {
        let owned = super::conversation::find_owned(tx.conn(), conversation_id, user_id).await;
        let found = owned.map(|c| {
            if c.is_some() {
                Begin::Busy
            } else {
                Begin::NotFound
            }
        });
        return abort_with(tx, found).await;
    };

    let (built, input_estimate) = build(&conversation, &history, &access.tools, &custom_tools);
    let reserve_ask = ReserveAsk {
        user_id,
        limit: access.limit(),
        want: input_estimate + ask.max_output,
        need: input_estimate + ask.min_output,
        now: ask.now,
        hold_ttl: ask.hold_ttl,
        process_id,
    };
    let insert = message::insert_many(tx.conn(), std::slice::from_ref(&user_message));
    let insert = match &idempotency {
        None => insert,
        Some(key) => {
            let recorded = super::idempotency::record(
                tx.conn(),
                user_id,
                key,
                conversation_id,
                turn_id,
                user_message.id,
            );
            futures_util::future::try_join(insert, recorded)
                .map(|r| r.map(drop))
                .boxed()
        }
    };
    let (hold, committing) = if reserve_ask.limit.tokens.is_none() {
        (
            budget::unlimited_hold(&reserve_ask),
            tx.commit_later(insert),
        )
    } else {
        let store =
            futures_util::future::try_join(budget::try_reserve(tx.conn(), &reserve_ask), insert);
        let first = match store.await {
            Ok((first, ())) => first,
            Err(e) => return abort_with(tx, Err(e)).await,
        };
        // The rollback undoes the claim and the user message if the budget refuses.
        match budget::reserve_after(tx.conn(), &reserve_ask, first).await {
            Ok(Reserve::Granted(hold)) => (hold, tx.commit_later(ready_ok())),
            Ok(refused) => return abort_with(tx, Ok(Begin::Refused(refused))).await,
            Err(e) => return abort_with(tx, Err(e)).await,
        }
    };
    Ok(Begin::Started(Box::new(Started {
        conversation,
        account,
        built,
        input_estimate,
        allowed_tools: access.tools,
        custom_tools,
        hold,
        committing,
    })))
}

fn ready_ok() -> BoxFuture<'static, QueryResult<()>> {
    futures_util::future::ready(Ok(())).boxed()
}

/// Rolls the transaction back and answers `outcome`, or the rollback's error.
async fn abort_with<T>(tx: Pipelined<'_>, outcome: QueryResult<T>) -> QueryResult<T> {
    let rolled_back = tx.abort().await;
    outcome.and_then(|v| rolled_back.map(|()| v))
}

/// Between two model calls of a turn: the finished step and the next call's ask.
#[derive(Debug)]
pub struct Step {
    pub settle: Option<(Hold, i64)>,
    /// The step's messages (the model's, with its tool calls, then their results).
    pub messages: Vec<NewMessage>,
    /// Usage rows of the step's model call.
    pub usage: Vec<NewUsage>,
    /// Audit rows of the tool calls since the last commit.
    pub audit: Vec<NewAudit>,
    pub want: i64,
    pub need: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: Duration,
    pub process_id: Uuid,
}

/// What [`next_call`] stored and found.
#[derive(Debug)]
pub struct NextCall {
    /// The reservation for the next call. An error here comes after the step's commit: the
    /// settlement and the audit rows are stored all the same and must not be sent again.
    pub reserve: QueryResult<Reserve>,
    /// Tools the user's role allows now.
    pub allowed_tools: Vec<String>,
}

/// Stores the finished step (its messages and usage), settles the previous call's hold,
/// stores the audit rows of its tool calls, re-reads the
/// user's allowed tools and budget rule (admin changes apply to the next call) and reserves
/// for the next call, in one commit. A refused reservation still commits the rest. `Err`:
/// nothing was committed (unless the connection broke while the COMMIT was on its way).
///
/// Round trips: BEGIN with the step, the settlement, the audit rows and the read; then the
/// reservation with COMMIT behind it.
pub async fn next_call(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    step: Step,
) -> QueryResult<NextCall> {
    let mut tx = Pipelined::open(conn);
    let settle = match &step.settle {
        Some((hold, actual)) => budget::settle(tx.conn(), hold, *actual),
        None => futures_util::future::ready(Ok(0)).boxed(),
    };
    let first = futures_util::future::try_join5(
        message::insert_many(tx.conn(), &step.messages),
        usage::insert_many(tx.conn(), &step.usage),
        settle,
        audit::insert_many(tx.conn(), &step.audit),
        access(tx.conn(), user_id),
    );
    let access = match tx.begin_with(first).await {
        Ok(((), (), _, (), access)) => access,
        Err(e) => return abort_with(tx, Err(e)).await,
    };
    let Some(access) = access else {
        tx.commit().await?;
        return Ok(NextCall {
            reserve: Ok(Reserve::Exhausted {
                resets_at: None,
                need: step.need,
                left: 0,
                limit: None,
            }),
            allowed_tools: Vec::new(),
        });
    };
    let reserve_ask = ReserveAsk {
        user_id,
        limit: access.limit(),
        want: step.want,
        need: step.need,
        now: step.now,
        hold_ttl: step.hold_ttl,
        process_id: step.process_id,
    };
    let reserve = budget::try_reserve(tx.conn(), &reserve_ask);
    let first = tx.commit_with(reserve).await?;
    // Rarely (a new period began mid-turn, or too little is free) the answer needs more
    // statements; each of them is atomic on its own.
    Ok(NextCall {
        reserve: budget::reserve_after(conn, &reserve_ask, first).await,
        allowed_tools: access.tools,
    })
}

pub use super::turn_release::{
    abandon, active_turn, finish, is_active, is_claim_lost, release_with, Finish,
};
