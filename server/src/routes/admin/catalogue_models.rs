//! `POST /api/admin/models`, `PUT|DELETE /api/admin/models/{name}`: thin handlers over the
//! catalogue's edit service ([`crate::catalogue::Catalogue::create_model`] and its
//! neighbours), which checks the model against the whole catalogue, stores and audits it.

use actix_web::{web, HttpResponse};
use serde_json::Value;

use super::models::model_info;
use crate::auth::AdminUser;
use crate::config::ModelConfig;
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

/// The model as the answer shows it (from the rebuilt catalogue).
async fn model_view(state: &AppState, name: &str) -> Result<Value, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let roles = role::list(&mut conn).await?;
    let catalogue = state.catalogue.now();
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
    state
        .catalogue
        .create_model(&state.pool, &admin.0, &model)
        .await?;
    let view = model_view(&state, &model.name).await?;
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
    state
        .catalogue
        .replace_model(&state.pool, &admin.0, &name, &model)
        .await?;
    let view = model_view(&state, &model.name).await?;
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
    state
        .catalogue
        .delete_model(&state.pool, &admin.0, &name)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
