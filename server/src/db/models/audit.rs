//! The tool-call audit trail: one row per call, whatever its outcome.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::BoxFuture;
use serde::Serialize;
use uuid::Uuid;

use crate::db::prepared::{column, sql, BindList, Sql};
use crate::db::rows_insert::RowsInsert;
use crate::db::schema::audit_log::{self, dsl};

/// Largest argument document kept verbatim (bytes of JSON text).
pub const MAX_ARGUMENT_BYTES: usize = 4096;

#[derive(Debug, Clone)]
pub struct NewAudit {
    pub user_id: Option<Uuid>,
    pub username: String,
    pub conversation_id: Option<Uuid>,
    pub tool: String,
    pub tool_call_id: String,
    pub arguments: serde_json::Value,
    pub arguments_truncated: bool,
    pub outcome: String,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub result_bytes: i64,
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    /// The decision on a call that needed one.
    pub approval: Option<ApprovalAudit>,
}

/// The decision on a call that needed approval, as its audit row records it.
#[derive(Debug, Clone)]
pub struct ApprovalAudit {
    /// `user` or `admin`: who had to confirm.
    pub policy: crate::domain::Approver,
    /// `approved`, `denied` or `expired`.
    pub decision: crate::domain::ApprovalState,
    /// Username of who decided (none when it expired).
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
}

/// The model's arguments for the audit row: kept as JSON when small, else a cut preview.
pub fn capped_arguments(raw: &str) -> (serde_json::Value, bool) {
    if raw.len() <= MAX_ARGUMENT_BYTES {
        let v =
            serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()));
        return (v, false);
    }
    let mut end = MAX_ARGUMENT_BYTES;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    (
        serde_json::json!({"preview": &raw[..end], "total_bytes": raw.len()}),
        true,
    )
}

#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = audit_log)]
pub struct AuditRow {
    pub id: i64,
    pub created_at: DateTime<Utc>,
    pub user_id: Option<Uuid>,
    pub username: String,
    pub conversation_id: Option<Uuid>,
    pub tool: String,
    pub tool_call_id: String,
    pub arguments: serde_json::Value,
    pub arguments_truncated: bool,
    pub outcome: String,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub result_bytes: i64,
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    pub approval_policy: Option<String>,
    pub approval_decision: Option<String>,
    pub approval_decided_by: Option<String>,
    pub approval_note: Option<String>,
    pub approval_decided_at: Option<DateTime<Utc>>,
}

/// Filters of the audit listing; all optional.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    pub user_id: Option<Uuid>,
    /// The username the rows keep (case-insensitive), for accounts deleted since.
    pub username: Option<String>,
    pub tool: Option<String>,
    pub outcome: Option<String>,
    /// `approved`, `denied`, `expired`, or `none` (calls that needed no approval).
    pub decision: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Rows with an id below this one (the previous page's last id).
    pub before_id: Option<i64>,
    pub limit: i64,
}

/// Inserts the rows, in order, with one statement of fixed text (prepared once per
/// connection); the future does not borrow the connection (pipelinable).
pub fn insert_many(
    conn: &mut AsyncPgConnection,
    rows: &[NewAudit],
) -> BoxFuture<'static, QueryResult<()>> {
    crate::db::prepared::insert_rows(conn, rows, insert_rows)
}

/// The statement [`insert_many`] sends, to send it as part of another
/// ([`crate::db::prepared::Joined`]).
pub fn insert_rows(rows: &[NewAudit]) -> Sql<impl BindList + Send + 'static> {
    use crate::db::{pg_safe_json, pg_safe_text};
    use diesel::sql_types::{
        Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
    };
    let text = |s: &String| pg_safe_text(s).into_owned();
    static INSERT: LazyLock<RowsInsert> = LazyLock::new(|| {
        RowsInsert::new(
            "audit_log",
            &[
                ("user_id", "uuid"),
                ("username", "text"),
                ("conversation_id", "uuid"),
                ("tool", "text"),
                ("tool_call_id", "text"),
                ("arguments", "jsonb"),
                ("arguments_truncated", "bool"),
                ("outcome", "text"),
                ("error", "text"),
                ("duration_ms", "int8"),
                ("result_bytes", "int8"),
                ("trace_id", "text"),
                ("span_id", "text"),
                ("approval_policy", "text"),
                ("approval_decision", "text"),
                ("approval_decided_by", "text"),
                ("approval_note", "text"),
                ("approval_decided_at", "timestamptz"),
            ],
        )
    });
    // Raw SQL: every row in one prepared statement (fixed text, cached).
    sql(INSERT.text(rows.len()))
        .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.user_id))
        .bind::<Array<Text>, _>(column(rows, |r| r.username.clone()))
        .bind::<Array<Nullable<SqlUuid>>, _>(column(rows, |r| r.conversation_id))
        .bind::<Array<Text>, _>(column(rows, |r| text(&r.tool)))
        .bind::<Array<Text>, _>(column(rows, |r| text(&r.tool_call_id)))
        .bind::<Array<Jsonb>, _>(column(rows, |r| pg_safe_json(&r.arguments)))
        .bind::<Array<Bool>, _>(column(rows, |r| r.arguments_truncated))
        .bind::<Array<Text>, _>(column(rows, |r| r.outcome.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| {
            r.error.as_deref().map(|e| pg_safe_text(e).into_owned())
        }))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.duration_ms))
        .bind::<Array<BigInt>, _>(column(rows, |r| r.result_bytes))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.trace_id.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.span_id.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.approval.as_ref().map(|a| a.policy)))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| r.approval.as_ref().map(|a| a.decision)))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| {
            r.approval.as_ref().and_then(|a| a.decided_by.clone())
        }))
        .bind::<Array<Nullable<Text>>, _>(column(rows, |r| {
            r.approval
                .as_ref()
                .and_then(|a| a.note.as_deref().map(|n| pg_safe_text(n).into_owned()))
        }))
        .bind::<Array<Nullable<Timestamptz>>, _>(column(rows, |r| {
            r.approval.as_ref().and_then(|a| a.decided_at)
        }))
}

/// Newest first.
pub async fn list(conn: &mut AsyncPgConnection, f: &AuditFilter) -> QueryResult<Vec<AuditRow>> {
    let mut q = dsl::audit_log
        .select(AuditRow::as_select())
        .order(dsl::id.desc())
        .limit(f.limit)
        .into_boxed();
    if let Some(u) = f.user_id {
        q = q.filter(dsl::user_id.eq(u));
    }
    if let Some(name) = &f.username {
        q = q.filter(super::lower(dsl::username).eq(name.to_lowercase()));
    }
    if let Some(t) = &f.tool {
        q = q.filter(dsl::tool.eq(t.clone()));
    }
    if let Some(o) = &f.outcome {
        q = q.filter(dsl::outcome.eq(o.clone()));
    }
    match f.decision.as_deref() {
        None => {}
        Some("none") => q = q.filter(dsl::approval_decision.is_null()),
        Some(d) => q = q.filter(dsl::approval_decision.eq(d.to_owned())),
    }
    if let Some(s) = f.since {
        q = q.filter(dsl::created_at.ge(s));
    }
    if let Some(u) = f.until {
        q = q.filter(dsl::created_at.lt(u));
    }
    if let Some(b) = f.before_id {
        q = q.filter(dsl::id.lt(b));
    }
    q.load(conn).await
}

/// Calls and failures of one tool over a period.
#[derive(Debug, Clone, Serialize, diesel::QueryableByName, utoipa::ToSchema)]
pub struct ToolTally {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub tool: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub calls: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub failures: i64,
}

/// Tool calls and failures per tool between `from` and `to` (open if None).
pub async fn tally_by_tool(
    conn: &mut AsyncPgConnection,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
) -> QueryResult<Vec<ToolTally>> {
    use diesel::sql_types::{Nullable, Timestamptz};
    // Raw SQL: `count(*) FILTER (WHERE …)`, an aggregate the DSL cannot say.
    diesel::sql_query(
        "SELECT tool, count(*)::BIGINT AS calls, \
                count(*) FILTER (WHERE outcome <> 'ok')::BIGINT AS failures \
         FROM audit_log WHERE created_at >= $1 AND ($2::timestamptz IS NULL OR created_at < $2) \
         GROUP BY tool ORDER BY calls DESC, tool",
    )
    .bind::<Timestamptz, _>(from)
    .bind::<Nullable<Timestamptz>, _>(to)
    .load(conn)
    .await
}
