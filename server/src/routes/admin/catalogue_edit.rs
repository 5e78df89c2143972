//! `POST /api/admin/providers`, `PUT|DELETE /api/admin/providers/{name}`, and what every
//! catalogue change shares (the models' routes are [`super::catalogue_models`]): the
//! catalogue entries the admin API owns, at run time. Each change is checked against the whole catalogue, stored with its
//! admin-trail row in one transaction, then every process rebuilds its catalogue. Keys are
//! write-only: never answered, never in the trail; an edit that moves a provider to another
//! origin must send its key again. The configuration's entries answer 409.

use actix_web::{web, HttpResponse};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::models::provider_info;
use crate::auth::AdminUser;
use crate::config::catalogue::check_provider;
use crate::config::{ProviderConfig, ProviderKind};
use crate::db;
use crate::db::models::admin_change::{self, NewChange};
use crate::db::models::catalogue_entry::{self, Entry, EntryKind};
use crate::error::ApiError;
use crate::extract::Json;
use crate::llm::catalogue::Source;
use crate::state::AppState;

/// A provider as the API takes it. On PUT an absent `api_key` keeps the stored one (while
/// the provider stays on the same origin); `""` removes it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderBody {
    pub name: Option<String>,
    pub kind: ProviderKind,
    #[serde(default)]
    pub base_url: String,
    pub api_key: Option<String>,
    pub connect_timeout_secs: Option<u64>,
    pub first_byte_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
}

fn provider_of(
    name: &str,
    body: ProviderBody,
    existing: Option<&ProviderConfig>,
) -> Result<ProviderConfig, ApiError> {
    let base_url = body.base_url.trim().trim_end_matches('/').to_owned();
    let api_key = match (body.api_key, existing) {
        (Some(k), _) => Some(k).filter(|k| !k.is_empty()).map(SecretString::from),
        (None, Some(e))
            if e.api_key.is_some()
                && (e.kind != body.kind
                    || !same_origin(
                        &effective(e.kind, &e.base_url),
                        &effective(body.kind, &base_url),
                    )) =>
        {
            return Err(ApiError::unprocessable(
                "api_key_required",
                "kind or base_url moves the provider to another endpoint: send its api_key \
                 again (a stored key is never sent anywhere else)",
            ));
        }
        (None, Some(e)) => e.api_key.clone(),
        (None, None) => None,
    };
    let p = ProviderConfig {
        name: name.to_owned(),
        kind: body.kind,
        base_url,
        api_key,
        connect_timeout_secs: body.connect_timeout_secs,
        first_byte_timeout_secs: body.first_byte_timeout_secs,
        idle_timeout_secs: body.idle_timeout_secs,
        request_timeout_secs: body.request_timeout_secs,
        max_retries: body.max_retries,
    };
    check_provider(&p).map_err(|e| ApiError::bad_request("invalid_provider", e))?;
    Ok(p)
}

/// The URL requests go to: the configured one, or the vendor's.
fn effective(kind: ProviderKind, base_url: &str) -> String {
    match base_url {
        "" => kind.vendor_base_url().to_owned(),
        url => url.to_owned(),
    }
}

/// Whether two base URLs share scheme, host and port (unparsable ones never do).
fn same_origin(a: &str, b: &str) -> bool {
    let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin());
    match (origin(a), origin(b)) {
        (Some(a), Some(b)) => a.is_tuple() && a == b,
        _ => false,
    }
}

/// A provider as the admin trail keeps it: whether a key is set, never the key, nor a
/// password in the URL.
fn provider_trail(p: &ProviderConfig) -> Value {
    json!({
        "name": p.name, "kind": p.kind, "base_url": super::models::shown_url(p.kind, &p.base_url),
        "api_key_set": p.api_key.is_some(),
        "connect_timeout_secs": p.connect_timeout_secs, "first_byte_timeout_secs": p.first_byte_timeout_secs,
        "idle_timeout_secs": p.idle_timeout_secs, "request_timeout_secs": p.request_timeout_secs,
        "max_retries": p.max_retries,
    })
}

fn same_key(a: &ProviderConfig, b: &ProviderConfig) -> bool {
    let key = |p: &ProviderConfig| p.api_key.as_ref().map(|k| k.expose_secret().to_owned());
    key(a) == key(b)
}

/// The provider the admin API owns, or 404 / 409 (configured).
fn owned_provider(state: &AppState, name: &str) -> Result<ProviderConfig, ApiError> {
    let catalogue = state.engine.catalogue.now();
    match catalogue.providers().iter().find(|(p, _)| p.name == name) {
        None => Err(ApiError::not_found("provider")),
        Some((_, Source::Config)) => Err(configured("provider", name)),
        Some((p, Source::Api)) => Ok(p.clone()),
    }
}

pub(super) fn configured(what: &str, name: &str) -> ApiError {
    ApiError::conflict(
        if what == "model" {
            "configured_model"
        } else {
            "configured_provider"
        },
        format!("the {what} `{name}` comes from the configuration; change it there"),
    )
}

/// Stores the change and its trail row in one transaction, then rebuilds the catalogue here
/// and tells the other processes.
pub(super) async fn commit(
    state: &AppState,
    conn: &mut AsyncPgConnection,
    store: Store<'_>,
    change: NewChange,
) -> Result<(), ApiError> {
    let key = db::sealed::SealingKey::of(&state.settings);
    let stored = conn
        .transaction(|conn| {
            async move {
                let key = key.as_ref();
                let done = match store {
                    Store::Insert(entry) => catalogue_entry::insert(conn, entry, key).await?,
                    Store::Update(entry) => catalogue_entry::update(conn, entry, key).await?,
                    Store::Delete(kind, name) => catalogue_entry::delete(conn, kind, name).await?,
                };
                if done {
                    admin_change::record(conn, change).await?;
                }
                Ok::<_, diesel::result::Error>(done)
            }
            .scope_boxed()
        })
        .await?;
    if !stored {
        return Err(ApiError::conflict(
            "catalogue_changed",
            "another admin changed this entry at the same moment; reload and try again",
        ));
    }
    if let Err(e) = state.catalogue_parts().reload(conn).await {
        tracing::warn!(error = %e, "the catalogue could not be rebuilt after a change");
    }
    crate::turn::catalogue_sync::tell_other_processes(conn).await;
    Ok(())
}

pub(super) enum Store<'a> {
    Insert(Entry<'a>),
    Update(Entry<'a>),
    Delete(EntryKind, &'a str),
}

#[utoipa::path(post, path = "/api/admin/providers", tag = "admin", request_body = ProviderBody,
    responses((status = 201, description = "Added", body = super::models::ProviderInfo),
    (status = 400, description = "Not an acceptable provider", body = crate::error::ErrorBody),
    (status = 409, description = "A provider of that name exists", body = crate::error::ErrorBody)))]
pub(super) async fn create_provider(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<ProviderBody>,
) -> Result<HttpResponse, ApiError> {
    let name = body
        .name
        .clone()
        .ok_or_else(|| ApiError::bad_request("invalid_provider", "name is required"))?;
    let provider = provider_of(&name, body, None)?;
    let exists = |s: &AppState| {
        let c = s.engine.catalogue.now();
        c.providers().iter().any(|(p, _)| p.name == name)
    };
    if exists(&state) {
        return Err(ApiError::conflict(
            "provider_exists",
            format!("a provider named `{name}` exists"),
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    let change = NewChange::by(&admin.0, "provider.create", &name).after(provider_trail(&provider));
    commit(
        &state,
        &mut conn,
        Store::Insert(Entry::Provider(&provider)),
        change,
    )
    .await
    .map_err(|e| exists_or(e, "provider_exists", &name))?;
    let view = provider_info(&provider, Source::Api, &state.engine.breakers);
    Ok(HttpResponse::Created().json(view))
}

/// A lost race on insert is the name being taken.
pub(super) fn exists_or(e: ApiError, code: &'static str, name: &str) -> ApiError {
    if e.code() == "catalogue_changed" {
        ApiError::conflict(code, format!("`{name}` exists"))
    } else {
        e
    }
}

#[utoipa::path(put, path = "/api/admin/providers/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = ProviderBody, responses((status = 200, description = "Replaced", body = super::models::ProviderInfo),
    (status = 404, description = "No such provider", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the configuration", body = crate::error::ErrorBody),
    (status = 422, description = "A new origin needs its key again", body = crate::error::ErrorBody)))]
pub(super) async fn replace_provider(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<ProviderBody>,
) -> Result<HttpResponse, ApiError> {
    if body.name.as_deref().is_some_and(|n| n != name.as_str()) {
        return Err(ApiError::bad_request(
            "invalid_provider",
            "the name in the body differs from the path; providers cannot be renamed",
        ));
    }
    let current = owned_provider(&state, &name)?;
    let provider = provider_of(&name, body, Some(&current))?;
    let mut after = provider_trail(&provider);
    if !same_key(&current, &provider) {
        after["api_key_changed"] = json!(true);
    }
    let change = NewChange::by(&admin.0, "provider.update", name.as_str())
        .before(provider_trail(&current))
        .after(after);
    let mut conn = db::conn(&state.pool).await?;
    commit(
        &state,
        &mut conn,
        Store::Update(Entry::Provider(&provider)),
        change,
    )
    .await?;
    let view = provider_info(&provider, Source::Api, &state.engine.breakers);
    Ok(HttpResponse::Ok().json(view))
}

#[utoipa::path(delete, path = "/api/admin/providers/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 204, description = "Removed"),
    (status = 404, description = "No such provider", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the configuration, or models use it", body = crate::error::ErrorBody)))]
pub(super) async fn delete_provider(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let current = owned_provider(&state, &name)?;
    let users: Vec<String> = {
        let c = state.engine.catalogue.now();
        c.models()
            .iter()
            .filter(|m| m.provider == name.as_str())
            .map(|m| m.name.clone())
            .collect()
    };
    if !users.is_empty() {
        return Err(ApiError::conflict(
            "provider_in_use",
            format!(
                "models use `{name}`: {}; remove them first",
                users.join(", ")
            ),
        ));
    }
    let change =
        NewChange::by(&admin.0, "provider.delete", name.as_str()).before(provider_trail(&current));
    let mut conn = db::conn(&state.pool).await?;
    let store = Store::Delete(EntryKind::Provider, name.as_str());
    commit(&state, &mut conn, store, change).await?;
    Ok(HttpResponse::NoContent().finish())
}
