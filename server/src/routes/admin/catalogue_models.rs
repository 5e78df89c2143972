//! `POST /api/admin/models`, `PUT|DELETE /api/admin/models/{name}`: the models the admin API
//! owns, checked against the whole catalogue (their provider and fallbacks must be in it),
//! stored and audited like providers ([`super::catalogue_edit::commit`]).

use actix_web::{web, HttpResponse};
use diesel_async::AsyncPgConnection;
use serde_json::Value;

use super::catalogue_edit::{commit, configured, exists_or, Store};
use super::models::model_info;
use crate::auth::AdminUser;
use crate::config::catalogue::check_model;
use crate::config::ModelConfig;
use crate::db::models::admin_change::NewChange;
use crate::db::models::catalogue_entry::{Entry, EntryKind};
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::extract::Json;
use crate::llm::catalogue::Source;
use crate::state::AppState;

/// Checks `m` against the catalogue: its provider and fallbacks must be in it.
fn check_against_catalogue(state: &AppState, m: &ModelConfig) -> Result<(), ApiError> {
    let catalogue = state.engine.catalogue.now();
    let provider_exists = catalogue
        .providers()
        .iter()
        .any(|(p, _)| p.name == m.provider);
    let model_exists = |f: &str| catalogue.get(f).is_some();
    check_model(m, &state.settings.llm, provider_exists, &model_exists)
        .map_err(|e| ApiError::bad_request("invalid_model", e))
}

/// The model the admin API owns, or 404 / 409 (configured).
fn owned_model(state: &AppState, name: &str) -> Result<ModelConfig, ApiError> {
    let catalogue = state.engine.catalogue.now();
    let Some(m) = catalogue.get(name) else {
        return Err(ApiError::not_found("model"));
    };
    if m.source == Source::Config {
        return Err(configured("model", name));
    }
    Ok(ModelConfig {
        name: m.name.clone(),
        provider: m.provider.clone(),
        upstream_model: m.upstream_model.clone(),
        context_window: Some(m.context_window),
        max_output: Some(m.max_output),
        prices: m.prices().to_vec(),
        fallbacks: m.fallbacks.clone(),
    })
}

/// The model as the answer shows it (from the rebuilt catalogue).
async fn model_view(
    state: &AppState,
    conn: &mut AsyncPgConnection,
    name: &str,
) -> Result<Value, ApiError> {
    let roles = role::list(conn).await?;
    let catalogue = state.engine.catalogue.now();
    let m = catalogue
        .get(name)
        .ok_or_else(|| ApiError::not_found("model"))?;
    Ok(serde_json::to_value(model_info(m, &roles, chrono::Utc::now())).unwrap_or_default())
}

#[utoipa::path(post, path = "/api/admin/models", tag = "admin", request_body = ModelConfig,
    responses((status = 201, description = "Added; roles with `*` may use it, others once they list it", body = super::models::AdminModel),
    (status = 400, description = "Not an acceptable model", body = crate::error::ErrorBody),
    (status = 409, description = "A model of that name exists", body = crate::error::ErrorBody)))]
pub(super) async fn create_model(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(model): Json<ModelConfig>,
) -> Result<HttpResponse, ApiError> {
    check_against_catalogue(&state, &model)?;
    if state.engine.catalogue.now().get(&model.name).is_some() {
        return Err(ApiError::conflict(
            "model_exists",
            format!("a model named `{}` exists", model.name),
        ));
    }
    let trail = serde_json::to_value(&model).unwrap_or_default();
    let change = NewChange::by(&admin.0, "model.create", &model.name).after(trail);
    let mut conn = db::conn(&state.pool).await?;
    commit(
        &state,
        &mut conn,
        Store::Insert(Entry::Model(&model)),
        change,
    )
    .await
    .map_err(|e| exists_or(e, "model_exists", &model.name))?;
    let view = model_view(&state, &mut conn, &model.name).await?;
    Ok(HttpResponse::Created().json(view))
}

#[utoipa::path(put, path = "/api/admin/models/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = ModelConfig, responses((status = 200, description = "Replaced", body = super::models::AdminModel),
    (status = 400, description = "Not an acceptable model", body = crate::error::ErrorBody),
    (status = 404, description = "No such model", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the configuration", body = crate::error::ErrorBody)))]
pub(super) async fn replace_model(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(model): Json<ModelConfig>,
) -> Result<HttpResponse, ApiError> {
    if model.name != name.as_str() {
        return Err(ApiError::bad_request(
            "invalid_model",
            "the name in the body differs from the path; models cannot be renamed",
        ));
    }
    let current = owned_model(&state, &name)?;
    check_against_catalogue(&state, &model)?;
    let change = NewChange::by(&admin.0, "model.update", name.as_str())
        .before(serde_json::to_value(&current).unwrap_or_default())
        .after(serde_json::to_value(&model).unwrap_or_default());
    let mut conn = db::conn(&state.pool).await?;
    commit(
        &state,
        &mut conn,
        Store::Update(Entry::Model(&model)),
        change,
    )
    .await?;
    let view = model_view(&state, &mut conn, &model.name).await?;
    Ok(HttpResponse::Ok().json(view))
}

#[utoipa::path(delete, path = "/api/admin/models/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 204, description = "Removed (chats that named it are asked to pick another model)"),
    (status = 404, description = "No such model", body = crate::error::ErrorBody),
    (status = 409, description = "It comes from the configuration, or is another model's fallback", body = crate::error::ErrorBody)))]
pub(super) async fn delete_model(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let current = owned_model(&state, &name)?;
    let backed: Vec<String> = {
        let c = state.engine.catalogue.now();
        c.models()
            .iter()
            .filter(|m| m.fallbacks.iter().any(|f| f == name.as_str()))
            .map(|m| m.name.clone())
            .collect()
    };
    if !backed.is_empty() {
        return Err(ApiError::conflict(
            "model_in_use",
            format!(
                "`{name}` is the fallback of {}; change them first",
                backed.join(", ")
            ),
        ));
    }
    let change = NewChange::by(&admin.0, "model.delete", name.as_str())
        .before(serde_json::to_value(&current).unwrap_or_default());
    let mut conn = db::conn(&state.pool).await?;
    commit(
        &state,
        &mut conn,
        Store::Delete(EntryKind::Model, name.as_str()),
        change,
    )
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
