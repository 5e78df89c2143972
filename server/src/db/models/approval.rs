//! Tool calls waiting for a person's decision (`approvals`). A row is written when a turn
//! pauses, in the commit that stores its step; a decision updates it; the last decision of a
//! step (or its expiry) hands the step to the process that took it, which claims the
//! conversation and runs the turn on. The step's rows are locked together while deciding,
//! so two decisions taken at once on two processes cannot both think the other is pending.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use crate::db::schema::approvals::{self, dsl};
use crate::db::schema::conversations::dsl as conv;

/// One waiting (or decided) call as the API shows it.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = approvals)]
pub struct Approval {
    pub id: Uuid,
    pub conversation_id: Uuid,
    #[serde(skip)]
    pub user_id: Uuid,
    /// Who asked (the person chatting).
    pub username: String,
    pub turn_id: Uuid,
    /// The assistant message whose call this is.
    pub message_id: Uuid,
    pub tool_call_id: String,
    pub tool: String,
    /// The MCP server of the tool, for MCP tools.
    pub server: Option<String>,
    /// The arguments exactly as they will run.
    pub arguments: serde_json::Value,
    /// `user` or `admin`.
    pub approver: String,
    /// `pending`, `approved`, `denied` or `expired`.
    pub state: String,
    #[serde(skip)]
    pub decided_by: Option<Uuid>,
    /// Username of who decided.
    #[serde(rename = "decided_by")]
    pub decided_by_name: Option<String>,
    pub note: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    #[serde(skip)]
    pub resumed_at: Option<DateTime<Utc>>,
}

/// A call to hold for a decision.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = approvals)]
pub struct NewApproval {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub turn_id: Uuid,
    pub message_id: Uuid,
    pub tool_call_id: String,
    pub tool: String,
    pub server: Option<String>,
    pub arguments: serde_json::Value,
    pub approver: String,
    pub expires_at: DateTime<Utc>,
}

/// The database's clock (expiry is judged by it, so every process agrees).
fn db_now(
) -> diesel::expression::SqlLiteral<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>> {
    diesel::dsl::sql("now()")
}

/// Who decides.
#[derive(Debug, Clone)]
pub struct Decider {
    pub id: Uuid,
    pub username: String,
    pub is_admin: bool,
}

/// Why a decider may not decide an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not theirs and not for admins to see: answered as if it did not exist.
    Hidden,
    /// A member deciding a call an admin must confirm.
    AdminOnly,
    /// An admin deciding a call only the person chatting confirms.
    OwnerOnly,
}

/// Whether `who` may decide `a` (the rules of DESIGN §9).
pub fn may_decide(a: &Approval, who: &Decider) -> Result<(), Refusal> {
    let own = a.user_id == who.id;
    match (a.approver.as_str(), own, who.is_admin) {
        ("admin", _, true) => Ok(()),
        ("admin", true, false) => Err(Refusal::AdminOnly),
        (_, true, _) => Ok(()),
        (_, false, true) => Err(Refusal::OwnerOnly),
        _ => Err(Refusal::Hidden),
    }
}

/// A decided step handed to this process to run on.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The turn's id (its user message's), under which it claims the conversation again.
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
    AlreadyDecided(Box<Approval>),
    /// Recorded (`state` may be `expired` when it came too late). `resume`: this was the
    /// step's last decision and this process runs the turn on.
    Recorded {
        approval: Box<Approval>,
        resume: Option<Resume>,
    },
}

/// How long a just-paused turn may still hold its conversation while it finishes storing.
const CLAIM_WAIT: Duration = Duration::from_secs(3);

/// Records `decision` (`approved` or `denied`) on approval `id` by `who`.
pub async fn decide(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    who: &Decider,
    decision: &'static str,
    note: Option<String>,
    claim: &Claimant,
) -> QueryResult<Decided> {
    let Some(found) = find(conn, id).await? else {
        return Ok(Decided::NotFound);
    };
    if let Err(r) = may_decide(&found, who) {
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
            if mine.state != "pending" {
                return Ok(Decided::AlreadyDecided(Box::new(mine.clone())));
            }
            let updated: Approval = diesel::update(dsl::approvals.find(id))
                .set((
                    dsl::state.eq(diesel::dsl::sql::<diesel::sql_types::Text>(&format!(
                        "CASE WHEN expires_at <= now() THEN 'expired' ELSE '{decision}' END"
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

/// What a turn stores when it pauses: its step (the model's message, the results of the
/// calls that needed no approval, their audit rows and usage, the settled reservation) and
/// the calls that wait, in one commit. Nothing of the turn is held after it.
#[derive(Debug, Default)]
pub struct Pause {
    pub messages: Vec<super::message::NewMessage>,
    pub usage: Vec<super::usage::NewUsage>,
    pub audit: Vec<super::audit::NewAudit>,
    pub settle: Option<(super::budget::Hold, i64)>,
    pub approvals: Vec<NewApproval>,
}

pub async fn store_pause(conn: &mut AsyncPgConnection, pause: Pause) -> QueryResult<()> {
    conn.transaction(|c| {
        async move {
            super::message::insert_many(c, &pause.messages).await?;
            super::usage::insert_many(c, &pause.usage).await?;
            if let Some((hold, actual)) = &pause.settle {
                super::budget::settle(c, hold, *actual).await?;
            }
            super::audit::insert_many(c, &pause.audit).await?;
            diesel::insert_into(dsl::approvals)
                .values(&pause.approvals)
                .execute(c)
                .await?;
            Ok(())
        }
        .scope_boxed()
    })
    .await
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
        .any(|a| a.state == "pending" || a.resumed_at.is_some())
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
    super::turn_end::forget(c, turn_id).await?;
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
                    .filter(dsl::state.eq("pending"))
                    .filter(dsl::expires_at.le(diesel::dsl::now)),
            )
            .set((dsl::state.eq("expired"), dsl::decided_at.eq(db_now())))
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

/// The approval map of the user's role as it is now (`None`: no such account).
pub async fn role_map(
    conn: &mut AsyncPgConnection,
    user_id: Uuid,
) -> QueryResult<Option<serde_json::Value>> {
    use crate::db::schema::{roles::dsl as roles, users::dsl as users};
    users::users
        .inner_join(roles::roles)
        .filter(users::id.eq(user_id))
        .select(roles::approvals)
        .first(conn)
        .await
        .optional()
}

pub async fn find(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Approval>> {
    dsl::approvals
        .find(id)
        .select(Approval::as_select())
        .first(conn)
        .await
        .optional()
}

/// Filters of a listing.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this user's.
    pub user_id: Option<Uuid>,
    pub state: Option<String>,
    pub conversation_id: Option<Uuid>,
    /// Older than this (the previous page's cursor).
    pub before: Option<DateTime<Utc>>,
    pub limit: i64,
}

/// Newest first.
pub async fn list(conn: &mut AsyncPgConnection, f: &ListFilter) -> QueryResult<Vec<Approval>> {
    let mut q = dsl::approvals
        .select(Approval::as_select())
        .order((dsl::created_at.desc(), dsl::id.desc()))
        .limit(f.limit)
        .into_boxed();
    if let Some(u) = f.user_id {
        q = q.filter(dsl::user_id.eq(u));
    }
    if let Some(s) = &f.state {
        q = q.filter(dsl::state.eq(s.clone()));
    }
    if let Some(c) = f.conversation_id {
        q = q.filter(dsl::conversation_id.eq(c));
    }
    if let Some(b) = f.before {
        q = q.filter(dsl::created_at.lt(b));
    }
    q.load(conn).await
}

/// Whether a step of the conversation still waits for decisions or for its turn to go on
/// (a new message would land between a call and its result).
pub async fn blocks_conversation(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        dsl::approvals
            .filter(dsl::conversation_id.eq(conversation_id))
            .filter(dsl::resumed_at.is_null()),
    ))
    .get_result(conn)
    .await
}

/// Waiting calls per approver, and the age in seconds of the oldest (for the gauges).
#[derive(Debug, Clone, QueryableByName)]
pub struct Waiting {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub approver: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub count: i64,
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_secs: f64,
}

pub async fn waiting(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Waiting>> {
    diesel::sql_query(
        "SELECT approver, count(*)::BIGINT AS count, \
                COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::FLOAT8 AS oldest_secs \
           FROM approvals WHERE state = 'pending' GROUP BY approver",
    )
    .load(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(owner: Uuid, approver: &str) -> Approval {
        Approval {
            id: Uuid::new_v4(),
            conversation_id: Uuid::new_v4(),
            user_id: owner,
            username: "u".into(),
            turn_id: Uuid::new_v4(),
            message_id: Uuid::new_v4(),
            tool_call_id: "c".into(),
            tool: "t".into(),
            server: None,
            arguments: serde_json::json!({}),
            approver: approver.into(),
            state: "pending".into(),
            decided_by: None,
            decided_by_name: None,
            note: None,
            decided_at: None,
            created_at: Utc::now(),
            expires_at: Utc::now(),
            resumed_at: None,
        }
    }

    #[test]
    fn who_may_decide() {
        let owner = Uuid::new_v4();
        let me = |is_admin| Decider {
            id: owner,
            username: "me".into(),
            is_admin,
        };
        let other = |is_admin| Decider {
            id: Uuid::new_v4(),
            username: "other".into(),
            is_admin,
        };
        let user = approval(owner, "user");
        let admin = approval(owner, "admin");
        assert_eq!(may_decide(&user, &me(false)), Ok(()));
        assert_eq!(may_decide(&user, &other(false)), Err(Refusal::Hidden));
        assert_eq!(may_decide(&user, &other(true)), Err(Refusal::OwnerOnly));
        assert_eq!(may_decide(&admin, &me(false)), Err(Refusal::AdminOnly));
        assert_eq!(may_decide(&admin, &other(false)), Err(Refusal::Hidden));
        assert_eq!(may_decide(&admin, &other(true)), Ok(()));
        assert_eq!(may_decide(&admin, &me(true)), Ok(()));
    }
}
