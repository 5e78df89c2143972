//! Roles: tool allowlists and default budgets.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;

use crate::db::schema::roles::{self, dsl};

/// The role every new account gets after the first.
pub const MEMBER: &str = crate::domain::MEMBER_ROLE;
/// The role with access to the admin API.
pub const ADMIN: &str = crate::domain::ADMIN_ROLE;

#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = roles)]
pub struct Role {
    pub name: String,
    pub tools: Vec<String>,
    pub token_budget: Option<i64>,
    pub budget_period: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Tool (or `{server}__*`) -> who confirms its calls: `none`, `user` or `admin`.
    #[schema(value_type = Object)]
    pub approvals: serde_json::Value,
}

pub async fn find(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Option<Role>> {
    dsl::roles
        .find(name)
        .select(Role::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn exists(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(dsl::roles.find(name)))
        .get_result(conn)
        .await
}

pub async fn list(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Role>> {
    dsl::roles
        .order(dsl::name.asc())
        .select(Role::as_select())
        .load(conn)
        .await
}

/// Creates or replaces a role's allowlist and budget defaults.
pub async fn upsert(
    conn: &mut AsyncPgConnection,
    name: &str,
    tools: &[String],
    token_budget: Option<i64>,
    budget_period: &str,
    approvals: &serde_json::Value,
) -> QueryResult<Role> {
    diesel::insert_into(dsl::roles)
        .values((
            dsl::name.eq(name),
            dsl::tools.eq(tools),
            dsl::token_budget.eq(token_budget),
            dsl::budget_period.eq(budget_period),
            dsl::approvals.eq(approvals),
        ))
        .on_conflict(dsl::name)
        .do_update()
        .set((
            dsl::tools.eq(tools),
            dsl::token_budget.eq(token_budget),
            dsl::budget_period.eq(budget_period),
            dsl::approvals.eq(approvals),
            dsl::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Role::as_returning())
        .get_result(conn)
        .await
}
