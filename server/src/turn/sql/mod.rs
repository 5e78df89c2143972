//! The database side of an agent turn: one transaction before the model is called (claim the
//! conversation, read its history and the user's role, reserve budget for the first model
//! call, store the user message: [`open`] then [`Opened::reserve`]), one per tool step (store the step,
//! settle and reserve, read the role again: [`step`]) and one after the turn
//! (settle the last reservation, store what the turn produced and its usage, release the
//! claim: [`release`]). The role is read in the first round trip of each (a start reads it
//! with its other inputs in one statement, [`inputs`]; a step with [`access`]), so no step
//! reads it on a pooled connection of its own. This file holds the types they share.
//!
//! Statements that do not depend on each other are pipelined: sent together and answered
//! together, and BEGIN and COMMIT travel with them ([`crate::db::pipelined`]). Before the
//! first token that is one round trip with every read and the claim, one with the reservation
//! and the user message, and a COMMIT that overlaps the model call's opening; after the turn
//! it is a single round trip. That holds because every statement here has fixed text and is
//! prepared once per connection ([`crate::db::prepared`]): a statement diesel re-prepares
//! costs a round trip of its own. Statements that always travel together are sent as one
//! ([`crate::db::prepared::Joined`]): the fitted hold with the user message, and the whole
//! of a turn's end, which is then a transaction of its own without BEGIN or COMMIT.
//!
//! # Lock order
//!
//! Every transaction that locks more than one of these rows takes them in this order, and
//! statements of a pipeline run in the order they are built, so "built first" is "locked
//! first":
//!
//! 0. a paused step's approval rows, by id (a decision or an expiry that resumes the turn
//!    locks them, then claims the conversation: [`crate::turn::approval`]);
//! 1. the conversation row (a turn's claim, its release, a generated title);
//! 2. the user's budget rows: a token hold, then its token period (`budget_periods`), then a
//!    money hold, then its money period ([`crate::db::models::budget::settle`] and
//!    [`crate::db::models::budget::try_reserve`] keep tokens before money);
//! 3. new rows only: messages, usage, audit, `turn_ends`, idempotency keys. Inserting them
//!    takes a key-share lock on their conversation and user, which no update of those rows
//!    on this path conflicts with (none changes a key).
//!
//! The transactions: a turn's start ([`open`]: claim, then lock the budget period; then the
//! user message), a step ([`next_call`]: budget only, then new rows), a turn's end
//! ([`finish`], [`release_with`], [`abandon`]: release the claim, then settle; in `finish`'s
//! single statement the settlement reads the released row first), and a title
//! ([`title::store`]: the title, then settle, then its usage row). A transaction that may
//! still lose a conflict (another replica's sweep, an admin's change) is retried
//! ([`crate::db::conflict`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::budget::{Hold, Reserve};
use crate::db::models::conversation::Conversation;
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::message::NewMessage;
use crate::db::models::user::{AuthState, Rejection};
use crate::db::pipelined::{Committing, Pipelined};

mod access;
mod begin;
mod claim;
pub mod end;
pub mod inputs;
pub mod preset;
pub mod release;
mod rows;
mod step;
pub mod title;

pub use self::access::RoleNow;
pub use self::begin::{open, Opened};
pub use self::release::{
    abandon, active_turn, finish, is_active, is_claim_lost, release_with, Finish,
};
pub use self::step::{next_call, NextCall, Step};

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
    /// The server process running the turn (see [`crate::cluster::liveness`]).
    pub process_id: Uuid,
    /// The request's `Idempotency-Key`, recorded with the user message.
    pub idempotency: Option<crate::db::models::idempotency::IdempotencyKey>,
    /// A conversation the turn creates instead of claiming an existing one.
    pub new_conversation: Option<NewConversation>,
    /// A conversation holding this many messages takes no more ([`Refusal::Full`]).
    pub max_messages: i64,
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
    /// The caller's key's scopes, kept with the conversation for the turn's later steps.
    pub key_scopes: Option<crate::domain::KeyScopes>,
    /// The assistant a `/v1` call named (`assistant:<name>`).
    pub assistant_id: Option<Uuid>,
}

/// Budget wanted for the first model call.
#[derive(Debug, Clone)]
pub struct BudgetAsk {
    /// The conversation's model's price (set once the model is known).
    pub price: Option<crate::domain::pricing::Price>,
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
pub struct Started {
    pub conversation: Conversation,
    /// The account as it is now (name and role).
    pub account: AuthState,
    /// Estimated input tokens of the first call.
    pub input_estimate: i64,
    /// The user's role right now: its tools and approval policy.
    pub role: RoleNow,
    /// Admin-defined tools as they are now.
    pub custom_tools: Vec<CustomToolRow>,
    pub hold: Hold,
    /// The rest of the transaction; its connection is unusable until this is waited for.
    pub committing: Committing,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("conversation", &self.conversation.id)
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

/// Why a turn did not start; nothing was stored.
#[derive(Debug)]
pub enum Refusal {
    /// Not the caller's conversation, or no such conversation.
    NotFound,
    /// Another turn is running in this conversation.
    Busy,
    /// The conversation holds `llm.max_conversation_messages` already.
    Full,
    /// The budget does not cover the first call.
    Budget(Box<Reserve>),
    /// The token no longer admits its bearer.
    Rejected(Rejection),
}

pub(super) fn ready_ok() -> BoxFuture<'static, QueryResult<()>> {
    futures_util::future::ready(Ok(())).boxed()
}

/// Rolls the transaction back and answers `outcome`, or the rollback's error.
pub(super) async fn abort_with<T>(tx: Pipelined<'_>, outcome: QueryResult<T>) -> QueryResult<T> {
    let rolled_back = tx.abort().await;
    outcome.and_then(|v| rolled_back.map(|()| v))
}
