//! One step of a turn between two model calls: the finished step is stored, the last call
//! settled and the next one reserved in one commit, which also reads the role as it is now.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use uuid::Uuid;

use crate::db::models::audit::NewAudit;
use crate::db::models::budget::{self, Hold, HoldTurn, Reserve, ReserveAsk, Spend};
use crate::db::models::message::NewMessage;
use crate::db::models::usage::NewUsage;
use crate::db::pipelined::Pipelined;
use crate::turn::sql::abort_with;
use crate::turn::sql::access::{access, RoleNow};
use crate::turn::sql::rows::Rows;

/// Between two model calls of a turn: the finished step and the next call's ask.
#[derive(Debug)]
pub struct Step {
    pub settle: Option<(Hold, Spend)>,
    /// The step's messages (the model's, with its tool calls, then their results).
    pub messages: Vec<NewMessage>,
    /// Usage rows of the step's model call.
    pub usage: Vec<NewUsage>,
    /// Audit rows of the tool calls since the last commit.
    pub audit: Vec<NewAudit>,
    /// The next call's estimated input tokens (part of `want` and `need`).
    pub input: i64,
    /// The model's price, which a money budget reserves at.
    pub price: Option<crate::domain::pricing::Price>,
    pub want: i64,
    pub need: i64,
    pub now: DateTime<Utc>,
    pub hold_ttl: Duration,
    pub process_id: Uuid,
    /// The turn reserving and the conversation it claims: the sweeper frees the hold once
    /// the claim is gone.
    pub turn: HoldTurn,
}

/// What [`next_call`] stored and found.
#[derive(Debug)]
pub struct NextCall {
    /// The reservation for the next call. An error here comes after the step's commit: the
    /// settlement and the audit rows are stored all the same and must not be sent again.
    pub reserve: QueryResult<Reserve>,
    /// The user's role now (its tools and approval policy): it applies to the calls of the
    /// next model call.
    pub role: RoleNow,
}

/// Stores the finished step (its messages and usage), settles the previous call's hold,
/// stores the audit rows of its tool calls, re-reads the user's role (allowed tools, approval
/// policy, budget rule: admin changes apply from the next call on) and reserves
/// for the next call, in one commit. A refused reservation still commits the rest. `Err`:
/// nothing was committed (unless the connection broke while the COMMIT was on its way).
///
/// Round trips: BEGIN with the step's rows and the settlement (one statement, [`Rows`]) and
/// the read; then the reservation with COMMIT behind it.
pub async fn next_call(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
    step: &Step,
) -> QueryResult<NextCall> {
    let mut tx = Pipelined::open(conn);
    let rows = Rows {
        messages: &step.messages,
        usage: &step.usage,
        audit: &step.audit,
    };
    let first = futures_util::future::try_join(
        rows.store_settling(tx.conn(), step.settle.as_ref()),
        access(tx.conn(), user_id),
    );
    let access = match tx.begin_with(first).await {
        Ok(((), access)) => access,
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
            role: RoleNow::default(),
        });
    };
    let reserve_ask = ReserveAsk {
        user_id,
        limit: access.limit(),
        input: step.input,
        price: step.price.clone(),
        want: step.want,
        need: step.need,
        now: step.now,
        hold_ttl: step.hold_ttl,
        process_id: step.process_id,
        turn: Some(step.turn),
    };
    let reserve = budget::try_reserve(tx.conn(), &reserve_ask);
    let first = tx.commit_with(reserve).await?;
    // Rarely (a new period began mid-turn, or too little is free) the answer needs more
    // statements; each of them is atomic on its own.
    Ok(NextCall {
        reserve: budget::reserve_after(conn, &reserve_ask, first).await,
        role: access.role_now(),
    })
}
