//! `/api/admin/roles`: tool and model allowlists and budget defaults per role. New roles
//! allow nothing until an admin lists tools and models; changes apply to the next model call.

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use serde::Deserialize;
use serde_json::json;

use crate::auth::{AdminUser, AuthUser};
use crate::budget::Period;
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::extract::{double_option, Json};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/roles", web::get().to(list))
        .route("/roles/{name}", web::put().to(put));
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RoleBody {
    tools: Vec<String>,
    /// Absent: keep (or none for a new role); null: unlimited.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    token_budget: Option<Option<i64>>,
    budget_period: Option<String>,
    /// Tool (or `{server}__*`) -> who confirms its calls: `none`, `user` or `admin`. Absent:
    /// keep the role's (none for a new role). A tool left out keeps its default: none, or
    /// `user` for an MCP tool not annotated read-only.
    #[schema(value_type = Option<Object>)]
    approvals: Option<std::collections::BTreeMap<String, String>>,
    /// Catalogue models the role may use; `*` allows every model. Absent: keep the role's
    /// (none for a new role: deny by default, like tools).
    models: Option<Vec<String>>,
    /// Most a user of the role may spend per period, as an exact decimal string
    /// (`"25.00"`), in `budget_currency`. Absent: keep; null: no money budget.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    budget_amount: Option<Option<String>>,
    /// ISO 4217 code of the money budget; must be the catalogue's price currency.
    budget_currency: Option<String>,
    /// Whether the role's users may make public conversation links (readable without
    /// signing in). Absent: keep (false for a new role). Taking it away stops their
    /// public links from showing until it is given back.
    can_share_public: Option<bool>,
}

/// `role` as the API shows it: its row and whether it may share publicly.
fn with_sharing(role: &role::Role, can_share_public: bool) -> serde_json::Value {
    let mut v = serde_json::to_value(role).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("can_share_public".into(), json!(can_share_public));
    }
    v
}

/// Most models a role may list.
const MAX_ROLE_MODELS: usize = 500;

/// Most entries in a role's approval map.
const MAX_APPROVAL_ENTRIES: usize = 500;

/// Every role with its tools and budget.
#[utoipa::path(get, path = "/api/admin/roles", tag = "admin",
    responses((status = 200, description = "Roles", body = crate::openapi::schemas::RoleList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let public = crate::sharing::policy::public_roles(&mut conn).await?;
    let items: Vec<serde_json::Value> = role::list(&mut conn)
        .await?
        .iter()
        .map(|r| with_sharing(r, public.contains(&r.name)))
        .collect();
    Ok(HttpResponse::Ok().json(json!({"items": items})))
}

/// Creates or replaces a role.
#[utoipa::path(put, path = "/api/admin/roles/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = RoleBody, responses(
    (status = 200, description = "Replaced", body = crate::db::models::role::Role),
    (status = 201, description = "Created", body = crate::db::models::role::Role),
    (status = 400, description = "Invalid name, period, budget, approvals or model list", body = crate::error::ErrorBody),
    (status = 422, description = "A tool or model does not exist, or the money budget's currency is not the catalogue's", body = crate::error::ErrorBody)))]
async fn put(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<RoleBody>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    let valid_name = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !valid_name {
        return Err(ApiError::bad_request(
            "invalid_role",
            "role names are 1 to 32 of a-z, 0-9, `_`, `-`, starting with a letter",
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    let known = super::tool_names::KnownTools::load(&state, &mut conn).await?;
    known.check(&body.tools)?;
    if let Some(map) = &body.approvals {
        if map.len() > MAX_APPROVAL_ENTRIES {
            return Err(ApiError::bad_request(
                "invalid_approvals",
                format!("approvals may name at most {MAX_APPROVAL_ENTRIES} tools"),
            ));
        }
        for (tool, who) in map {
            if crate::tools::approval::Approver::parse(who).is_none() {
                return Err(ApiError::bad_request(
                    "invalid_approvals",
                    format!(
                        "approvals of `{}` must be none, user or admin",
                        crate::tools::truncate_chars(tool, 64)
                    ),
                ));
            }
            let pattern = crate::tools::policy::server_pattern(tool)
                .is_some_and(|server| known.mcp.iter().any(|m| m == server));
            if !pattern && !known.knows(tool) {
                return Err(ApiError::unprocessable(
                    "unknown_tool",
                    format!(
                        "no tool named `{}`; see GET /api/admin/tools",
                        crate::tools::truncate_chars(tool, 64)
                    ),
                ));
            }
        }
    }
    if let Some(models) = &body.models {
        let catalogue = &state.catalogue.now();
        if models.len() > MAX_ROLE_MODELS {
            return Err(ApiError::bad_request(
                "invalid_models",
                format!("a role may list at most {MAX_ROLE_MODELS} models"),
            ));
        }
        let unknown = models
            .iter()
            .find(|m| m.as_str() != crate::catalogue::ALL_MODELS && catalogue.get(m).is_none());
        if let Some(unknown) = unknown {
            return Err(ApiError::unprocessable(
                "unknown_model",
                format!(
                    "no model named `{}`; see GET /api/admin/models",
                    crate::tools::truncate_chars(unknown, 64)
                ),
            ));
        }
    }
    let period = body.budget_period.as_deref().unwrap_or("month");
    if Period::parse(period).is_none() {
        return Err(ApiError::bad_request(
            "invalid_period",
            "budget_period must be one of day, week, month, total",
        ));
    }
    if let Some(Some(b)) = body.token_budget {
        if b < 0 {
            return Err(ApiError::bad_request(
                "invalid_budget",
                "token_budget must be a non-negative number of tokens, or null",
            ));
        }
    }
    let mut tools = body.tools.clone();
    tools.sort();
    tools.dedup();
    let existing = role::find(&mut conn, &name).await?;
    let budget = match body.token_budget {
        Some(b) => b,
        None => existing.as_ref().and_then(|r| r.token_budget),
    };
    let period = match (&body.budget_period, &existing) {
        (None, Some(r)) => r.budget_period.clone(),
        _ => period.to_owned(),
    };
    let approvals = match (&body.approvals, &existing) {
        (Some(map), _) => serde_json::to_value(map).unwrap_or_default(),
        (None, Some(r)) => r.approvals.clone(),
        (None, None) => json!({}),
    };
    let models = match (&body.models, &existing) {
        (Some(m), _) => {
            let mut m = m.clone();
            m.sort();
            m.dedup();
            m
        }
        (None, Some(r)) => r.models.clone(),
        (None, None) => Vec::new(),
    };
    let money = match &body.budget_amount {
        Some(amount) => money_budget(amount.as_deref(), body.budget_currency.as_deref(), &state)?,
        None => existing
            .as_ref()
            .and_then(|r| r.budget_amount.zip(r.budget_currency.clone())),
    };
    let rules = role::RoleRules {
        tools,
        token_budget: budget,
        budget_period: period,
        approvals,
        models,
        money,
    };
    let change = Put {
        who: &admin.0,
        name: &name,
        rules,
        share_public: body.can_share_public,
        existing: existing.as_ref(),
    };
    let saved = admin_change::apply(&mut conn, change).await?.saved;
    let status = if existing.is_some() {
        actix_web::http::StatusCode::OK
    } else {
        actix_web::http::StatusCode::CREATED
    };
    Ok(HttpResponse::build(status).json(saved))
}

/// Largest money budget per period (fits `NUMERIC(20,9)` with room to add usage).
const MAX_BUDGET_AMOUNT: i64 = 1_000_000_000;

/// A role's money budget from its body: an exact decimal of at most 9 places, in the
/// currency the catalogue prices in (a budget in another currency could never be charged).
fn money_budget(
    amount: Option<&str>,
    currency: Option<&str>,
    state: &AppState,
) -> Result<Option<(rust_decimal::Decimal, String)>, ApiError> {
    let Some(amount) = amount else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::bad_request(
            "invalid_budget",
            format!(
                "budget_amount must be a decimal string such as \"25.00\" from 0 to \
                 {MAX_BUDGET_AMOUNT}, with at most 9 decimal places, or null"
            ),
        )
    };
    if amount.len() > 40 {
        return Err(invalid());
    }
    let value = rust_decimal::Decimal::from_str_exact(amount.trim()).map_err(|_| invalid())?;
    if value.is_sign_negative()
        || value.scale() > crate::domain::pricing::COST_SCALE
        || value > rust_decimal::Decimal::from(MAX_BUDGET_AMOUNT)
    {
        return Err(invalid());
    }
    let Some(currency) = currency else {
        return Err(ApiError::bad_request(
            "invalid_budget",
            "a budget_amount needs its budget_currency (e.g. \"USD\")",
        ));
    };
    if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(ApiError::bad_request(
            "invalid_budget",
            "budget_currency must be a three-letter ISO 4217 code such as USD",
        ));
    }
    let catalogue = state.catalogue.now();
    let priced = catalogue.currencies();
    if !priced.is_empty() && !priced.contains(&currency) {
        return Err(ApiError::unprocessable(
            "currency_mismatch",
            format!(
                "models are priced in {}; a budget in {currency} could never be charged",
                priced.join(", ")
            ),
        ));
    }
    Ok(Some((value.normalize(), currency.to_owned())))
}

/// A role created or replaced, with whether its members may share publicly.
struct Put<'a> {
    who: &'a AuthUser,
    name: &'a str,
    rules: role::RoleRules,
    /// `None` keeps the role's sharing as it is.
    share_public: Option<bool>,
    existing: Option<&'a role::Role>,
}

/// The role as saved and as it was, each with its sharing.
struct Saved {
    saved: serde_json::Value,
    before: Option<serde_json::Value>,
}

#[async_trait]
impl AdminWrite for Put<'_> {
    type Output = Saved;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<Saved, Self::Error> {
        use crate::sharing::policy;
        let was_public = policy::role_may_share_publicly(conn, self.name).await?;
        let saved = role::upsert(conn, self.name, &self.rules).await?;
        if let Some(allowed) = self.share_public {
            policy::set_role_may_share_publicly(conn, self.name, allowed).await?;
        }
        Ok(Saved {
            saved: with_sharing(&saved, self.share_public.unwrap_or(was_public)),
            before: self.existing.map(|b| with_sharing(b, was_public)),
        })
    }

    fn trail(&self, out: &Saved) -> Option<NewChange> {
        let kind = if out.before.is_some() {
            "role.update"
        } else {
            "role.create"
        };
        let change = NewChange::by(self.who, kind, self.name).after(&out.saved);
        Some(match &out.before {
            Some(b) => change.before(b),
            None => change,
        })
    }
}
