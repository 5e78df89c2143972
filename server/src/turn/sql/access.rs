//! The account and its role as a turn's transaction reads them: one indexed join, sent in the
//! first round trip of the turn's start and of every step, so that what the role allows (its
//! tools, its approval policy, its budget rule) is the role as it is at that commit and costs
//! no round trip of its own.

use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Int4, Int8, Jsonb, Nullable, Numeric, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};
use uuid::Uuid;

use crate::db::models::budget::Limit;
use crate::db::models::user::AuthState;
use crate::db::schema::{roles::dsl as roles, users::dsl as users};
use crate::tools::approval::{self, ApprovalMap};

/// What the user's role allows as a turn's transaction found it: the turn applies it to the
/// calls of the model call that follows that commit.
#[derive(Debug, Clone, Default)]
pub struct RoleNow {
    /// The role's name (refusals name it).
    pub name: String,
    /// Models the role may use (`*`: all).
    pub models: Vec<String>,
    /// Tools the role allows.
    pub tools: Vec<String>,
    /// Which of them wait for a person's decision.
    pub approvals: ApprovalMap,
}

impl RoleNow {
    /// Narrows the role's tools to what `preset` (an assistant's list) also allows.
    pub fn narrow_to(&mut self, preset: &[String]) {
        self.tools = crate::tools::policy::intersect(&self.tools, preset);
    }

    /// The role narrowed by the turn's assistant, if it has one.
    pub fn narrowed(
        mut self,
        assistant: Option<&crate::turn::sql::preset::AssistantPreset>,
    ) -> Self {
        if let Some(a) = assistant {
            self.narrow_to(&a.tools);
        }
        self
    }
}

/// The account as the database has it now, its role's tools, approval policy and budget
/// rule: one indexed join. Read by position here ([`access`]) and by name where a start
/// reads it with its other inputs ([`crate::turn::sql::inputs`]).
#[derive(Debug, Queryable, QueryableByName)]
pub(super) struct Access {
    #[diesel(sql_type = Text)]
    username: String,
    #[diesel(sql_type = Text)]
    role: String,
    #[diesel(sql_type = Bool)]
    disabled: bool,
    #[diesel(sql_type = Int4)]
    pub(super) token_version: i32,
    #[diesel(sql_type = Array<Text>)]
    tools: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    models: Vec<String>,
    #[diesel(sql_type = Jsonb)]
    approvals: serde_json::Value,
    #[diesel(sql_type = Nullable<Int8>)]
    user_budget: Option<i64>,
    #[diesel(sql_type = Nullable<Int8>)]
    role_budget: Option<i64>,
    #[diesel(sql_type = Text)]
    budget_period: String,
    #[diesel(sql_type = Nullable<Numeric>)]
    budget_amount: Option<rust_decimal::Decimal>,
    #[diesel(sql_type = Nullable<Text>)]
    budget_currency: Option<String>,
}

impl Access {
    pub(super) fn limit(&self) -> Limit {
        Limit::from_columns(self.user_budget.or(self.role_budget), &self.budget_period)
            .with_money(self.budget_amount, self.budget_currency.clone())
    }

    pub(super) fn account(&self) -> AuthState {
        AuthState {
            username: self.username.clone(),
            role: self.role.clone(),
            disabled: self.disabled,
            token_version: self.token_version,
        }
    }

    pub(super) fn role_now(self) -> RoleNow {
        RoleNow {
            approvals: approval::from_json(&self.approvals),
            tools: self.tools,
            models: self.models,
            name: self.role,
        }
    }
}

pub(super) fn access(
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
            roles::models,
            roles::approvals,
            users::token_budget,
            roles::token_budget,
            roles::budget_period,
            roles::budget_amount,
            roles::budget_currency,
        ))
        .first::<Access>(conn)
        .map(|r| r.optional())
        .boxed()
}
