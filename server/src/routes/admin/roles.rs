//! `/api/admin/roles`: tool allowlists and budget defaults per role. New roles allow
//! nothing until an admin lists tools; changes apply to the next model call.

use actix_web::{web, HttpResponse};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use serde::Deserialize;
use serde_json::json;

use crate::auth::AdminUser;
use crate::budget::Period;
use crate::db::models::admin_change::{self, NewChange};
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
}

/// Most entries in a role's approval map.
const MAX_APPROVAL_ENTRIES: usize = 500;

/// Every role with its tools and budget.
#[utoipa::path(get, path = "/api/admin/roles", tag = "admin",
    responses((status = 200, description = "Roles", body = crate::openapi::schemas::RoleList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    Ok(HttpResponse::Ok().json(json!({"items": role::list(&mut conn).await?})))
}

/// Creates or replaces a role.
#[utoipa::path(put, path = "/api/admin/roles/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = RoleBody, responses(
    (status = 200, description = "Replaced", body = crate::db::models::role::Role),
    (status = 201, description = "Created", body = crate::db::models::role::Role),
    (status = 422, description = "A tool does not exist", body = crate::error::ErrorBody)))]
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
    let custom = crate::db::models::custom_tool::list(&mut conn).await?;
    let known = state.tools.specs();
    // An MCP tool or `{server}__*` is accepted for any configured server, even one that is
    // down right now (its tools come back with it).
    let mcp = state.mcp.names();
    let is_mcp = |t: &String| {
        mcp.iter().any(|server| {
            t.strip_prefix(server.as_str())
                .is_some_and(|rest| rest.starts_with("__") && rest.len() > 2)
        })
    };
    let is_known = |t: &String| {
        known.iter().any(|s| &s.name == t) || custom.iter().any(|c| &c.name == t) || is_mcp(t)
    };
    if let Some(unknown) = body.tools.iter().find(|t| !is_known(t)) {
        return Err(ApiError::unprocessable(
            "unknown_tool",
            format!("no tool named `{unknown}`; see GET /api/admin/tools"),
        ));
    }
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
                .is_some_and(|server| mcp.iter().any(|m| m == server));
            if !pattern && !is_known(tool) {
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
    let (who, before) = (&admin.0, existing.clone());
    let saved = conn
        .transaction(|conn| {
            async move {
                let saved = role::upsert(conn, &name, &tools, budget, &period, &approvals).await?;
                let kind = if before.is_some() {
                    "role.update"
                } else {
                    "role.create"
                };
                let mut change = NewChange::by(who, kind, &name).after(&saved);
                if let Some(b) = before {
                    change = change.before(b);
                }
                admin_change::record(conn, change).await?;
                Ok::<_, diesel::result::Error>(saved)
            }
            .scope_boxed()
        })
        .await?;
    let status = if existing.is_some() {
        actix_web::http::StatusCode::OK
    } else {
        actix_web::http::StatusCode::CREATED
    };
    Ok(HttpResponse::build(status).json(saved))
}
