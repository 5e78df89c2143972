//! The database side of an agent turn: one transaction before the model is called (claim the
//! conversation, read its history and the user's tools, reserve budget for the first model
//! call, store the user message) and one after the turn (settle the last reservation, store
//! what the turn produced and its usage, release the claim).

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::audit::{self, NewAudit};
use super::budget::{self, Hold, Reserve};
use super::conversation::Conversation;
use super::custom_tool::{self, CustomToolRow};
use super::message::{self, Message, NewMessage};
use super::usage::{self, NewUsage};
use crate::db::schema::{conversations::dsl as conv, roles::dsl as roles};

/// Who starts a turn where.
#[derive(Debug, Clone)]
pub struct Claim {
    pub user_id: Uuid,
    pub role: String,
    pub turn_id: Uuid,
    /// A claim older than this belongs to a dead process and may be taken over.
    pub stale_after: Duration,
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

/// What starting a turn found.
#[derive(Debug)]
pub enum Begin<T> {
    Started {
        conversation: Conversation,
        /// Whatever the caller built from the history (the model input).
        built: T,
        /// Estimated input tokens of the first call.
        input_estimate: i64,
        /// Tools the user's role allows right now.
        allowed_tools: Vec<String>,
        /// Admin-defined tools as they are now.
        custom_tools: Vec<CustomToolRow>,
        hold: Hold,
    },
    /// Not the caller's conversation, or no such conversation.
    NotFound,
    /// Another turn is running in this conversation.
    Busy,
    /// The budget does not cover the first call; nothing was stored.
    Refused(Reserve),
}

enum Abort<T> {
    Db(diesel::result::Error),
    Early(Begin<T>),
}

impl<T> From<diesel::result::Error> for Abort<T> {
    fn from(e: diesel::result::Error) -> Self {
        Abort::Db(e)
    }
}

/// Claims the conversation, reserves the first call's budget and stores the user message,
/// in one commit; nothing is kept when the budget refuses. `build` turns the history and the
/// allowed tools into the model input and its estimated size in tokens.
pub async fn begin<T, F>(
    conn: &mut AsyncPgConnection,
    claim: Claim,
    user_message: NewMessage,
    ask: BudgetAsk,
    build: F,
) -> QueryResult<Begin<T>>
where
    T: Send + 'static,
    F: FnOnce(&[Message], &[String], &[CustomToolRow]) -> (T, i64) + Send + 'static,
{
    let Claim {
        user_id,
        role,
        turn_id,
        stale_after,
    } = claim;
    let stale =
        ask.now - chrono::Duration::from_std(stale_after).unwrap_or(chrono::Duration::minutes(10));
    let result = conn
        .transaction(|conn| {
            async move {
                let claimed: Option<Conversation> = diesel::update(
                    conv::conversations
                        .filter(conv::id.eq(user_message.conversation_id))
                        .filter(conv::user_id.eq(user_id))
                        .filter(
                            conv::active_turn_id
                                .is_null()
                                .or(conv::active_turn_at.lt(stale)),
                        ),
                )
                .set((
                    conv::active_turn_id.eq(turn_id),
                    conv::active_turn_at.eq(diesel::dsl::now),
                    conv::updated_at.eq(diesel::dsl::now),
                ))
                .returning(Conversation::as_returning())
                .get_result(conn)
                .await
                .optional()?;
                let Some(conversation) = claimed else {
                    let owned = super::conversation::find_owned(
                        conn,
                        user_message.conversation_id,
                        user_id,
                    )
                    .await?
                    .is_some();
                    return Err(Abort::Early(if owned {
                        Begin::Busy
                    } else {
                        Begin::NotFound
                    }));
                };
                let allowed_tools: Vec<String> = roles::roles
                    .find(&role)
                    .select(roles::tools)
                    .first(conn)
                    .await
                    .optional()?
                    .unwrap_or_default();
                let custom_tools = custom_tool::list(conn).await?;
                let history = message::list(conn, conversation.id).await?;
                let (built, input_estimate) = build(&history, &allowed_tools, &custom_tools);
                let reserved = budget::reserve(
                    conn,
                    user_id,
                    input_estimate + ask.max_output,
                    input_estimate + ask.min_output,
                    ask.now,
                    ask.hold_ttl,
                )
                .await?;
                let hold = match reserved {
                    Reserve::Granted(h) => h,
                    refused => return Err(Abort::Early(Begin::Refused(refused))),
                };
                message::insert_many(conn, std::slice::from_ref(&user_message)).await?;
                Ok(Begin::Started {
                    conversation,
                    built,
                    input_estimate,
                    allowed_tools,
                    custom_tools,
                    hold,
                })
            }
            .scope_boxed()
        })
        .await;
    match result {
        Ok(b) => Ok(b),
        Err(Abort::Early(b)) => Ok(b),
        Err(Abort::Db(e)) => Err(e),
    }
}

/// Between two model calls of a turn.
#[derive(Debug)]
pub struct Step {
    pub settle: Option<(Hold, i64)>,
    /// Audit rows of the tool calls since the last commit.
    pub audit: Vec<NewAudit>,
    pub want: i64,
    pub need: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: Duration,
}

/// Settles the previous call's hold, stores the audit rows of its tool calls, re-reads the
/// user's allowed tools (admin changes apply to the next call) and reserves for the next
/// call, in one commit.
pub async fn next_call(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    step: Step,
) -> QueryResult<(Reserve, Vec<String>)> {
    conn.transaction(|conn| {
        async move {
            if let Some((hold, actual)) = step.settle {
                budget::settle(conn, &hold, actual).await?;
            }
            audit::insert_many(conn, &step.audit).await?;
            let allowed = allowed_tools(conn, user_id).await?;
            let reserved =
                budget::reserve(conn, user_id, step.want, step.need, step.now, step.hold_ttl)
                    .await?;
            Ok((reserved, allowed))
        }
        .scope_boxed()
    })
    .await
}

/// The tools the user's current role allows.
pub async fn allowed_tools(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
) -> QueryResult<Vec<String>> {
    use crate::db::schema::users::dsl as users;
    users::users
        .inner_join(roles::roles)
        .filter(users::id.eq(user_id))
        .select(roles::tools)
        .first(conn)
        .await
        .optional()
        .map(Option::unwrap_or_default)
}

/// Settles the last hold, stores what the turn produced and its usage, and releases the
/// claim, in one commit.
pub async fn finish(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    rows: Vec<NewMessage>,
    usage_rows: Vec<NewUsage>,
    audit_rows: Vec<NewAudit>,
    settle: Option<(Hold, i64)>,
) -> QueryResult<()> {
    conn.transaction(|conn| {
        async move {
            if let Some((hold, actual)) = settle {
                budget::settle(conn, &hold, actual).await?;
            }
            message::insert_many(conn, &rows).await?;
            usage::insert_many(conn, &usage_rows).await?;
            audit::insert_many(conn, &audit_rows).await?;
            release(conn, conversation_id, turn_id).await
        }
        .scope_boxed()
    })
    .await
}

/// Releases the claim of `turn_id` (after a panic, with its hold released uncharged).
pub async fn abandon(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
    hold: Option<Hold>,
) -> QueryResult<()> {
    conn.transaction(|conn| {
        async move {
            if let Some(h) = hold {
                budget::settle(conn, &h, 0).await?;
            }
            release(conn, conversation_id, turn_id).await
        }
        .scope_boxed()
    })
    .await
}

async fn release(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    turn_id: Uuid,
) -> QueryResult<()> {
    diesel::update(
        conv::conversations
            .filter(conv::id.eq(conversation_id))
            .filter(conv::active_turn_id.eq(turn_id)),
    )
    .set((
        conv::active_turn_id.eq(None::<Uuid>),
        conv::active_turn_at.eq(None::<DateTime<Utc>>),
        conv::updated_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await
    .map(|_| ())
}

/// Whether a turn is running in the conversation (on any replica).
pub async fn is_active(conn: &mut AsyncPgConnection, conversation_id: Uuid) -> QueryResult<bool> {
    conv::conversations
        .find(conversation_id)
        .select(conv::active_turn_id.is_not_null())
        .first(conn)
        .await
}
