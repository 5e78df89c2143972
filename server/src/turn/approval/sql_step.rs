//! Deciding a paused step: a decision (or the expiry sweeper) locks the step's rows
//! together, so two decisions taken at once on two processes cannot both think the other is
//! still pending; the one that leaves nothing pending claims the conversation for a new turn
//! id and marks the step taken over, exactly once.

use std::time::Duration;

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::db::schema::approvals::dsl;
use crate::db::schema::conversations::dsl as conv;
use crate::domain::{ApprovalState, Approver};
use crate::tools::approval;
use crate::turn::approval::sql::{db_now, find, may_decide, Approval, Decider, Refusal};

/// A decided step handed to this process to run on.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The id the resumed part of the turn runs under (its claim on the conversation).
    pub turn_id: Uuid,
    pub conversation_id: Uuid,
    pub user_id: Uuid,
    pub message_id: Uuid,
    /// Every call of the step that waited, decided.
    pub calls: Vec<Approval>,
}

/// What a decision did.
#[derive(Debug)]
pub enum Decided {
    NotFound,
    Refused(Refusal),
    /// It was decided before (or expired); nothing changed.
    Earlier(Box<Approval>),
    /// Recorded (`state` may be `expired` when it came too late). `resume`: this was the
    /// step's last decision and this process runs the turn on.
    Recorded {
        approval: Box<Approval>,
        resume: Option<Resume>,
    },
}

/// How long a just-paused turn may still hold its conversation while it finishes storing.
/// Past it the sweeper runs the step on within seconds; a decision followed by its caller
/// waits instead. 3 s was too short on a loaded machine: the whole API suite on 2 cores
/// once got a decision back unresumed (`approvals::a_denied_call_*`).
const CLAIM_WAIT: Duration = Duration::from_secs(10);

/// Records `decision` (`approved` or `denied`) on approval `id` by `who`.
pub async fn decide(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    who: &Decider,
    decision: ApprovalState,
    note: Option<String>,
    claim: &Claimant,
) -> QueryResult<Decided> {
    let Some(mut found) = find(conn, id).await? else {
        return Ok(Decided::NotFound);
    };
    // Judged by the policy in force now: an admin who tightened the tool since the call
    // paused decides it, not the member (the row is re-routed below, so the trail shows it).
    let in_force = approver_now(conn, &found).await?;
    let tightened = rank(in_force) > rank(found.approver);
    if tightened {
        found.approver = in_force;
    }
    if let Err(r) = may_decide(&found, who) {
        if tightened && found.state == ApprovalState::Pending {
            reroute(conn, id, in_force).await?;
        }
        return Ok(Decided::Refused(r));
    }
    let who = who.clone();
    let claim = claim.clone();
    conn.transaction(|c| {
        async move {
            let step = lock_step(c, found.message_id).await?;
            let Some(mine) = step.iter().find(|a| a.id == id) else {
                return Ok(Decided::NotFound);
            };
            if mine.state != ApprovalState::Pending {
                return Ok(Decided::Earlier(Box::new(mine.clone())));
            }
            let updated: Approval = diesel::update(dsl::approvals.find(id))
                .set((
                    dsl::approver.eq(found.approver),
                    dsl::state.eq(diesel::dsl::sql::<diesel::sql_types::Text>(&format!(
                        "CASE WHEN expires_at <= now() THEN 'expired' ELSE '{}' END",
                        decision.as_str()
                    ))),
                    dsl::decided_by.eq(Some(who.id)),
                    dsl::decided_by_name.eq(Some(who.username.clone())),
                    dsl::note.eq(note),
                    dsl::decided_at.eq(db_now()),
                ))
                .returning(Approval::as_returning())
                .get_result(c)
                .await?;
            let resume = take_over_if_decided(c, found.message_id, &claim).await?;
            Ok(Decided::Recorded {
                approval: Box::new(updated),
                resume,
            })
        }
        .scope_boxed()
    })
    .await
}

/// Who must decide `a`'s call under its user's role as it is now (an explicit entry of the
/// role's map; the MCP default is the one the call paused with).
async fn approver_now(conn: &mut AsyncPgConnection, a: &Approval) -> QueryResult<Approver> {
    let Some(user) = crate::db::models::user::auth_state(conn, a.user_id).await? else {
        return Ok(a.approver);
    };
    let Some(role) = crate::db::models::role::find(conn, &user.role).await? else {
        return Ok(a.approver);
    };
    let map = approval::from_json(&role.approvals);
    Ok(approval::required(&map, &a.tool, approval::NO_DEFAULT))
}

/// How strict a level is: nobody < the user < an admin.
fn rank(a: Approver) -> u8 {
    match a {
        Approver::None => 0,
        Approver::User => 1,
        Approver::Admin => 2,
    }
}

/// Records that a waiting call now waits for `approver` (a tightened policy).
async fn reroute(conn: &mut AsyncPgConnection, id: Uuid, approver: Approver) -> QueryResult<()> {
    diesel::update(dsl::approvals.find(id))
        .filter(dsl::state.eq(ApprovalState::Pending))
        .set(dsl::approver.eq(approver))
        .execute(conn)
        .await
        .map(drop)
}

/// What a process needs to claim a conversation for a resumed turn.
#[derive(Debug, Clone)]
pub struct Claimant {
    pub process_id: Uuid,
    /// A claim older than this belongs to a dead process.
    pub stale_after: Duration,
}

/// The step's rows, locked in a fixed order.
async fn lock_step(c: &mut AsyncPgConnection, message_id: Uuid) -> QueryResult<Vec<Approval>> {
    dsl::approvals
        .filter(dsl::message_id.eq(message_id))
        .order(dsl::id.asc())
        .for_update()
        .select(Approval::as_select())
        .load(c)
        .await
}

/// Inside the step's lock: when no call of the step waits any more and nobody took it over
/// yet, claims the conversation for a new turn id and marks the step taken.
async fn take_over_if_decided(
    c: &mut AsyncPgConnection,
    message_id: Uuid,
    claim: &Claimant,
) -> QueryResult<Option<Resume>> {
    let step = dsl::approvals
        .filter(dsl::message_id.eq(message_id))
        .order(dsl::created_at.asc())
        .select(Approval::as_select())
        .load::<Approval>(c)
        .await?;
    let Some(first) = <[Approval]>::first(&step) else {
        return Ok(None);
    };
    if step
        .iter()
        .any(|a| a.state == ApprovalState::Pending || a.resumed_at.is_some())
    {
        return Ok(None);
    }
    // The turn goes on under its own id (its user message's): clients re-attach to it.
    let turn_id = first.turn_id;
    let started = std::time::Instant::now();
    loop {
        let stale = Utc::now()
            - chrono::Duration::from_std(claim.stale_after)
                .unwrap_or(chrono::Duration::minutes(10));
        let claimed = diesel::update(
            conv::conversations.find(first.conversation_id).filter(
                conv::active_turn_id
                    .is_null()
                    .or(conv::active_turn_at.lt(stale)),
            ),
        )
        .set((
            conv::active_turn_id.eq(Some(turn_id)),
            conv::active_turn_at.eq(db_now()),
            conv::active_process_id.eq(Some(claim.process_id)),
            conv::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
        if claimed == 1 {
            break;
        }
        // The turn that paused may still be storing its end; anything else waits for the
        // sweeper's next look.
        if started.elapsed() >= CLAIM_WAIT {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    diesel::update(dsl::approvals.filter(dsl::message_id.eq(message_id)))
        .set(dsl::resumed_at.eq(db_now()))
        .execute(c)
        .await?;
    // It runs again: the end its pause recorded is no longer its end.
    crate::turn::sql::end::forget(c, turn_id).await?;
    Ok(Some(Resume {
        turn_id,
        conversation_id: first.conversation_id,
        user_id: first.user_id,
        message_id,
        calls: step,
    }))
}

/// Expires the overdue calls of one step and takes the step over when that decided it.
pub async fn expire_step(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    claim: &Claimant,
) -> QueryResult<Option<Resume>> {
    let claim = claim.clone();
    conn.transaction(|c| {
        async move {
            lock_step(c, message_id).await?;
            diesel::update(
                dsl::approvals
                    .filter(dsl::message_id.eq(message_id))
                    .filter(dsl::state.eq(ApprovalState::Pending))
                    .filter(dsl::expires_at.le(diesel::dsl::now)),
            )
            .set((
                dsl::state.eq(ApprovalState::Expired),
                dsl::decided_at.eq(db_now()),
            ))
            .execute(c)
            .await?;
            take_over_if_decided(c, message_id, &claim).await
        }
        .scope_boxed()
    })
    .await
}

/// Steps with an overdue call, and decided steps nobody took over for a while (their
/// decider could not claim the conversation, or died first).
pub async fn steps_to_settle(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Step {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        message_id: Uuid,
    }
    let rows: Vec<Step> = diesel::sql_query(
        "SELECT DISTINCT message_id FROM approvals \
          WHERE state = 'pending' AND expires_at <= now() \
         UNION \
         SELECT message_id FROM approvals a WHERE resumed_at IS NULL \
          GROUP BY message_id \
         HAVING bool_and(state <> 'pending') \
            AND max(decided_at) < now() - interval '5 seconds' \
         LIMIT 100",
    )
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|s| s.message_id).collect())
}
