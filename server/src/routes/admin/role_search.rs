//! `/api/admin/roles/{name}/search`: a role's web search rules: which providers its users
//! may search with (in the order they are tried), which sites results and `http_get`
//! fetches may show (a domain covers its subdomains; deny wins), and how many queries a user
//! sends per day. Changes are in the admin trail.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::auth::AdminUser;
use crate::db;
use crate::db::models::admin_change::{self, NewChange};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::websearch::rules::{self, SearchRules, MAX_LIST};

use super::role_exists;
use super::search_write::{Op, SearchWrite};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/roles/{name}/search")
            .route(web::get().to(get))
            .route(web::put().to(put)),
    );
}

/// A role's rules as written to the API; an absent list is empty.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRulesBody {
    #[serde(default)]
    providers: Vec<String>,
    #[serde(default)]
    allow_domains: Vec<String>,
    #[serde(default)]
    deny_domains: Vec<String>,
    queries_per_day: Option<i32>,
}

#[utoipa::path(get, path = "/api/admin/roles/{name}/search", tag = "admin",
    params(("name" = String, Path)), responses(
    (status = 200, description = "The role's web search rules (defaults when none are set)", body = SearchRules),
    (status = 404, description = "No such role", body = crate::error::ErrorBody)))]
pub async fn get(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    role_exists(&state, &name).await?;
    let mut conn = db::conn(&state.pool).await?;
    let found = rules::for_role(&mut conn, &name).await?.unwrap_or_default();
    Ok(HttpResponse::Ok().json(found))
}

fn domains(field: &str, list: &[String]) -> Result<Vec<String>, ApiError> {
    if list.len() > MAX_LIST {
        return Err(ApiError::bad_request(
            "invalid_search_rules",
            format!("{field} may hold at most {MAX_LIST} domains"),
        ));
    }
    let mut out = Vec::new();
    for entry in list {
        let d = rules::normalise_domain(entry).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_search_rules",
                format!(
                    "{field}: `{}` is not a domain such as example.com",
                    crate::tools::truncate_chars(entry, 80)
                ),
            )
        })?;
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}

#[utoipa::path(put, path = "/api/admin/roles/{name}/search", tag = "admin",
    params(("name" = String, Path)), request_body = SearchRulesBody, responses(
    (status = 200, description = "Saved", body = SearchRules),
    (status = 400, description = "A domain or number is not acceptable", body = crate::error::ErrorBody),
    (status = 404, description = "No such role", body = crate::error::ErrorBody),
    (status = 422, description = "A provider does not exist", body = crate::error::ErrorBody)))]
pub async fn put(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<SearchRulesBody>,
) -> Result<HttpResponse, ApiError> {
    role_exists(&state, &name).await?;
    let mut conn = db::conn(&state.pool).await?;
    let known = state.web_search.providers(&mut conn).await?;
    if body.providers.len() > MAX_LIST {
        return Err(ApiError::bad_request(
            "invalid_search_rules",
            format!("providers may name at most {MAX_LIST}"),
        ));
    }
    let mut providers: Vec<String> = Vec::new();
    for p in &body.providers {
        if !known.iter().any(|k| &k.name == p) {
            return Err(ApiError::unprocessable(
                "unknown_search_provider",
                format!(
                    "no search provider named `{}`; see GET /api/admin/search-providers",
                    crate::tools::truncate_chars(p, 64)
                ),
            ));
        }
        if !providers.contains(p) {
            providers.push(p.clone());
        }
    }
    if body
        .queries_per_day
        .is_some_and(|n| !(0..=1_000_000).contains(&n))
    {
        return Err(ApiError::bad_request(
            "invalid_search_rules",
            "queries_per_day must be 0 to 1000000, or null for the server's setting",
        ));
    }
    let new = SearchRules {
        providers,
        allow_domains: domains("allow_domains", &body.allow_domains)?,
        deny_domains: domains("deny_domains", &body.deny_domains)?,
        queries_per_day: body.queries_per_day,
    };
    let before = rules::for_role(&mut conn, &name).await?;
    let mut change = NewChange::by(&admin.0, "role.search", name.as_str()).after(&new);
    if let Some(b) = before {
        change = change.before(b);
    }
    let op = Op::SaveRules {
        role: &name,
        rules: &new,
    };
    admin_change::apply(&mut conn, SearchWrite { op, change }).await?;
    Ok(HttpResponse::Ok().json(new))
}
