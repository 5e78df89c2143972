//! `/api/admin/search-providers`: the web search providers (SearXNG, Brave, Tavily). Those
//! from the config file are listed read-only; the API adds, edits and removes its own. Keys
//! are write-only (the answer says only whether one is set) and never enter the admin trail;
//! every change is in it.

use actix_web::{web, HttpResponse};
use rust_decimal::Decimal;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::auth::AdminUser;
use crate::config::search::check_provider;
use crate::config::{SearchKind, SearchProviderConfig};
use crate::db::models::admin_change::{self, NewChange};
use crate::db::{self, sealed::SealingKey};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

use super::search_write::{Op, SearchWrite};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/search-providers")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/search-providers/{name}")
            .route(web::get().to(get))
            .route(web::put().to(replace))
            .route(web::delete().to(delete)),
    );
}

/// A provider as written to the API. On PUT an absent `api_key` keeps the stored one.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchProviderBody {
    /// Required on POST; on PUT, if given, the path's.
    name: Option<String>,
    kind: SearchKind,
    /// Empty: the vendor's (Brave, Tavily); required for SearXNG.
    #[serde(default)]
    base_url: String,
    /// Write-only.
    api_key: Option<String>,
    /// An exact decimal string (`"0.005"`); absent: free.
    price_per_query: Option<String>,
    /// ISO 4217; absent: USD.
    currency: Option<String>,
    /// 1 to 120; absent: 10.
    timeout_secs: Option<u64>,
}

/// A provider as the API shows it: never its key.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SearchProviderView {
    name: String,
    kind: SearchKind,
    /// Shown without credentials.
    base_url: String,
    api_key_set: bool,
    /// An exact decimal string.
    price_per_query: String,
    currency: String,
    timeout_secs: u64,
    /// `config` (read-only here) or `api`.
    source: &'static str,
    /// Whether its breaker is open in the process that answered.
    breaker_open: bool,
}

/// The providers, `{items: [...]}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SearchProviderList {
    items: Vec<SearchProviderView>,
}

fn view(state: &AppState, p: &SearchProviderConfig) -> SearchProviderView {
    SearchProviderView {
        name: p.name.clone(),
        kind: p.kind,
        base_url: crate::domain::shown_url::shown_url(&p.base_url),
        api_key_set: p.api_key.is_some(),
        price_per_query: p
            .price_per_query
            .unwrap_or(Decimal::ZERO)
            .normalize()
            .to_string(),
        currency: p.currency.clone(),
        timeout_secs: p.timeout_secs,
        source: if state.web_search.is_configured(&p.name) {
            "config"
        } else {
            "api"
        },
        breaker_open: state.web_search.breaker_open(&p.name),
    }
}

/// What the admin trail keeps of a provider: no key, only whether one is set.
fn trail(p: &SearchProviderConfig) -> Value {
    json!({
        "name": p.name, "kind": p.kind, "base_url": crate::domain::shown_url::shown_url(&p.base_url),
        "api_key_set": p.api_key.is_some(),
        "price_per_query": p.price_per_query.unwrap_or(Decimal::ZERO).normalize().to_string(),
        "currency": p.currency, "timeout_secs": p.timeout_secs,
    })
}

fn body_to_config(
    name: &str,
    body: SearchProviderBody,
    existing: Option<&SearchProviderConfig>,
) -> Result<SearchProviderConfig, ApiError> {
    let price = match body.price_per_query.as_deref() {
        Some(text) => Some(text.trim().parse::<Decimal>().map_err(|_| {
            ApiError::bad_request(
                "invalid_price",
                "price_per_query must be a decimal amount written as a string, e.g. \"0.005\"",
            )
        })?),
        None => existing.and_then(|e| e.price_per_query),
    };
    let api_key = match (body.api_key, existing) {
        (Some(k), _) if !k.trim().is_empty() => Some(SecretString::from(k.trim().to_owned())),
        (Some(_), _) => None,
        // Write-only: an edit without a key keeps the stored one, but only on the same origin.
        (None, Some(e)) if e.api_key.is_some() && !same_origin(&e.base_url, &body.base_url) => {
            return Err(ApiError::unprocessable(
                "api_key_required",
                "base_url moves the provider to another origin: send its api_key again (a \
                 stored key is never sent to a new origin)",
            ))
        }
        (None, Some(e)) => e.api_key.clone(),
        (None, None) => None,
    };
    let config = SearchProviderConfig {
        name: name.to_owned(),
        kind: body.kind,
        base_url: body.base_url.trim().to_owned(),
        api_key,
        price_per_query: price,
        currency: body
            .currency
            .or_else(|| existing.map(|e| e.currency.clone()))
            .unwrap_or_else(|| "USD".to_owned()),
        timeout_secs: body
            .timeout_secs
            .or(existing.map(|e| e.timeout_secs))
            .unwrap_or(10),
    };
    check_provider(&config).map_err(|e| ApiError::bad_request("invalid_search_provider", e))?;
    Ok(config)
}

fn same_origin(a: &str, b: &str) -> bool {
    let origin = |u: &str| reqwest::Url::parse(u).ok().map(|u| u.origin());
    if a.trim().is_empty() && b.trim().is_empty() {
        return true;
    }
    match (origin(a), origin(b)) {
        (Some(a), Some(b)) => a.is_tuple() && a == b,
        _ => false,
    }
}

async fn all(state: &AppState) -> Result<Vec<SearchProviderConfig>, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    Ok(state.web_search.providers(&mut conn).await?)
}

async fn find(state: &AppState, name: &str) -> Result<SearchProviderConfig, ApiError> {
    all(state)
        .await?
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ApiError::not_found("search provider"))
}

fn editable(state: &AppState, name: &str) -> Result<(), ApiError> {
    if state.web_search.is_configured(name) {
        return Err(ApiError::conflict(
            "configured_provider",
            format!("`{name}` comes from the config file; change it there"),
        ));
    }
    Ok(())
}

/// Saves `config` (or deletes `name`) and its admin-trail row in one transaction.
async fn commit(
    state: &AppState,
    config: Option<&SearchProviderConfig>,
    change: NewChange,
    delete: Option<&str>,
) -> Result<(), ApiError> {
    let key = SealingKey::of(&state.settings);
    let op = match (config, delete) {
        (Some(config), _) => Op::SaveProvider {
            config,
            key: key.as_ref(),
        },
        (None, Some(name)) => Op::DeleteProvider(name),
        (None, None) => return Ok(()),
    };
    let mut conn = db::conn(&state.pool).await?;
    admin_change::apply(&mut conn, SearchWrite { op, change }).await?;
    Ok(())
}

#[utoipa::path(get, path = "/api/admin/search-providers", tag = "admin",
    responses((status = 200, description = "Web search providers", body = SearchProviderList)))]
pub async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let items: Vec<SearchProviderView> =
        all(&state).await?.iter().map(|p| view(&state, p)).collect();
    Ok(HttpResponse::Ok().json(SearchProviderList { items }))
}

#[utoipa::path(get, path = "/api/admin/search-providers/{name}", tag = "admin",
    params(("name" = String, Path)),
    responses((status = 200, description = "The provider", body = SearchProviderView),
    (status = 404, description = "No such provider", body = crate::error::ErrorBody)))]
pub async fn get(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let p = find(&state, &name).await?;
    Ok(HttpResponse::Ok().json(view(&state, &p)))
}

#[utoipa::path(post, path = "/api/admin/search-providers", tag = "admin",
    request_body = SearchProviderBody, responses(
    (status = 201, description = "Created", body = SearchProviderView),
    (status = 400, description = "Not an acceptable provider", body = crate::error::ErrorBody),
    (status = 409, description = "A provider of that name exists", body = crate::error::ErrorBody)))]
pub async fn create(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<SearchProviderBody>,
) -> Result<HttpResponse, ApiError> {
    let name = body
        .name
        .clone()
        .ok_or_else(|| ApiError::bad_request("invalid_name", "name is required"))?;
    let config = body_to_config(&name, body, None)?;
    if all(&state).await?.iter().any(|p| p.name == name) {
        return Err(ApiError::conflict(
            "search_provider_exists",
            format!("a search provider named `{name}` exists"),
        ));
    }
    let change = NewChange::by(&admin.0, "search_provider.create", &name).after(trail(&config));
    commit(&state, Some(&config), change, None).await?;
    Ok(HttpResponse::Created().json(view(&state, &config)))
}

#[utoipa::path(put, path = "/api/admin/search-providers/{name}", tag = "admin",
    params(("name" = String, Path)), request_body = SearchProviderBody, responses(
    (status = 200, description = "Replaced", body = SearchProviderView),
    (status = 400, description = "Not an acceptable provider", body = crate::error::ErrorBody),
    (status = 404, description = "No such provider", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the config file", body = crate::error::ErrorBody),
    (status = 422, description = "A new origin without its key", body = crate::error::ErrorBody)))]
pub async fn replace(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<SearchProviderBody>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    if body.name.as_deref().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(
            "invalid_name",
            "the name in the body differs from the path; providers cannot be renamed",
        ));
    }
    editable(&state, &name)?;
    let current = find(&state, &name).await?;
    let config = body_to_config(&name, body, Some(&current))?;
    let mut after = trail(&config);
    if !keys_equal(&current, &config) {
        // The key never enters the trail; that it changed does.
        after["api_key_changed"] = json!(true);
    }
    let change = NewChange::by(&admin.0, "search_provider.update", &name)
        .before(trail(&current))
        .after(after);
    commit(&state, Some(&config), change, None).await?;
    Ok(HttpResponse::Ok().json(view(&state, &config)))
}

fn keys_equal(a: &SearchProviderConfig, b: &SearchProviderConfig) -> bool {
    use secrecy::ExposeSecret;
    a.api_key.as_ref().map(|k| k.expose_secret().to_owned())
        == b.api_key.as_ref().map(|k| k.expose_secret().to_owned())
}

#[utoipa::path(delete, path = "/api/admin/search-providers/{name}", tag = "admin",
    params(("name" = String, Path)), responses((status = 204, description = "Deleted"),
    (status = 404, description = "No such provider", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the config file", body = crate::error::ErrorBody)))]
pub async fn delete(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    editable(&state, &name)?;
    let current = find(&state, &name).await?;
    let change =
        NewChange::by(&admin.0, "search_provider.delete", name.as_str()).before(trail(&current));
    commit(&state, None, change, Some(&name)).await?;
    Ok(HttpResponse::NoContent().finish())
}
