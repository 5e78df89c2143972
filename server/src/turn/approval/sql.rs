//! Tool calls waiting for a person's decision (`approvals`). A row is written when a turn
//! pauses, in the commit that stores its step; a decision updates it; the last decision of a
//! step (or its expiry) hands the step to the process that took it, which claims the
//! conversation and runs the turn on. The step's rows are locked together while deciding,
//! so two decisions taken at once on two processes cannot both think the other is pending.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use crate::db::schema::approvals::{self, dsl};
use crate::domain::{ApprovalState, Approver};

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
    pub approver: Approver,
    /// `pending`, `approved`, `denied` or `expired`.
    pub state: ApprovalState,
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
    pub approver: Approver,
    pub expires_at: DateTime<Utc>,
}

/// The database's clock (expiry is judged by it, so every process agrees).
pub(super) fn db_now(
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
    match (a.approver, own, who.is_admin) {
        (Approver::Admin, _, true) => Ok(()),
        (Approver::Admin, true, false) => Err(Refusal::AdminOnly),
        (_, true, _) => Ok(()),
        (_, false, true) => Err(Refusal::OwnerOnly),
        _ => Err(Refusal::Hidden),
    }
}

/// What a turn stores when it pauses: its step (the model's message, the results of the
/// calls that needed no approval, their audit rows and usage, the settled reservation) and
/// the calls that wait, in one commit. Nothing of the turn is held after it.
#[derive(Debug, Default)]
pub struct Pause {
    pub messages: Vec<crate::db::models::message::NewMessage>,
    pub usage: Vec<crate::db::models::usage::NewUsage>,
    pub audit: Vec<crate::db::models::audit::NewAudit>,
    pub settle: Option<(
        crate::db::models::budget::Hold,
        crate::db::models::budget::Spend,
    )>,
    pub approvals: Vec<NewApproval>,
}

pub async fn store_pause(conn: &mut AsyncPgConnection, pause: Pause) -> QueryResult<()> {
    conn.transaction(|c| {
        async move {
            crate::db::models::message::insert_many(c, &pause.messages).await?;
            crate::db::models::usage::insert_many(c, &pause.usage).await?;
            if let Some((hold, actual)) = &pause.settle {
                crate::db::models::budget::settle(c, hold, *actual).await?;
            }
            crate::db::models::audit::insert_many(c, &pause.audit).await?;
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
    pub state: Option<ApprovalState>,
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
        q = q.filter(dsl::state.eq(*s));
    }
    if let Some(c) = f.conversation_id {
        q = q.filter(dsl::conversation_id.eq(c));
    }
    if let Some(b) = f.before {
        q = q.filter(dsl::created_at.lt(b));
    }
    q.load(conn).await
}

/// The calls of the conversation's steps that still wait for decisions or for their turn to
/// go on (a new message would land between a call and its result): who decides each and
/// where it stands.
pub async fn blocking_calls(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
) -> QueryResult<Vec<(Approver, ApprovalState)>> {
    dsl::approvals
        .filter(dsl::conversation_id.eq(conversation_id))
        .filter(dsl::resumed_at.is_null())
        .select((dsl::approver, dsl::state))
        .load(conn)
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

    fn approval(owner: Uuid, approver: Approver) -> Approval {
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
            approver,
            state: ApprovalState::Pending,
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
        let user = approval(owner, Approver::User);
        let admin = approval(owner, Approver::Admin);
        assert_eq!(may_decide(&user, &me(false)), Ok(()));
        assert_eq!(may_decide(&user, &other(false)), Err(Refusal::Hidden));
        assert_eq!(may_decide(&user, &other(true)), Err(Refusal::OwnerOnly));
        assert_eq!(may_decide(&admin, &me(false)), Err(Refusal::AdminOnly));
        assert_eq!(may_decide(&admin, &other(false)), Err(Refusal::Hidden));
        assert_eq!(may_decide(&admin, &other(true)), Ok(()));
        assert_eq!(may_decide(&admin, &me(true)), Ok(()));
    }
}
