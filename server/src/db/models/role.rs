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
    /// Catalogue models the role may use (`*`: all); none: no chat at all.
    pub models: Vec<String>,
    /// Most the role's users may spend per period, an exact decimal string (null: no money
    /// budget), in `budget_currency`.
    #[schema(value_type = Option<String>)]
    #[serde(serialize_with = "crate::domain::pricing::decimal_text::option")]
    pub budget_amount: Option<rust_decimal::Decimal>,
    pub budget_currency: Option<String>,
}

/// What a role allows and how much it may spend: the fields an admin writes.
#[derive(Debug, Clone)]
pub struct RoleRules {
    pub tools: Vec<String>,
    pub token_budget: Option<i64>,
    pub budget_period: String,
    pub approvals: serde_json::Value,
    pub models: Vec<String>,
    /// Amount and currency per period.
    pub money: Option<(rust_decimal::Decimal, String)>,
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

/// Creates or replaces a role's allowlists and budget defaults.
pub async fn upsert(
    conn: &mut AsyncPgConnection,
    name: &str,
    rules: &RoleRules,
) -> QueryResult<Role> {
    let (amount, currency) = match &rules.money {
        Some((a, c)) => (Some(*a), Some(c.as_str())),
        None => (None, None),
    };
    let values = (
        dsl::tools.eq(&rules.tools),
        dsl::token_budget.eq(rules.token_budget),
        dsl::budget_period.eq(&rules.budget_period),
        dsl::approvals.eq(&rules.approvals),
        dsl::models.eq(&rules.models),
        dsl::budget_amount.eq(amount),
        dsl::budget_currency.eq(currency),
    );
    diesel::insert_into(dsl::roles)
        .values((dsl::name.eq(name), values))
        .on_conflict(dsl::name)
        .do_update()
        .set((values, dsl::updated_at.eq(diesel::dsl::now)))
        .returning(Role::as_returning())
        .get_result(conn)
        .await
}
