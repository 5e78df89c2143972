//! `POST /api/admin/providers`, `PUT|DELETE /api/admin/providers/{name}`: thin handlers over
//! the catalogue's edit service ([`crate::catalogue::edit`]), which checks, stores, audits and
//! rebuilds; the models' routes are [`super::catalogue_models`].

use actix_web::{web, HttpResponse};

use super::models::provider_info;
use crate::auth::AdminUser;
use crate::catalogue::{ProviderBody, Source};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;

#[utoipa::path(post, path = "/api/admin/providers", tag = "admin", request_body = ProviderBody,
    responses((status = 201, description = "Added", body = super::models::ProviderInfo),
    (status = 400, description = "Not an acceptable provider", body = crate::error::ErrorBody),
    (status = 409, description = "A provider of that name exists", body = crate::error::ErrorBody)))]
pub(super) async fn create_provider(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<ProviderBody>,
) -> Result<HttpResponse, ApiError> {
    let provider = state
        .catalogue
        .create_provider(&state.pool, &admin.0, body)
        .await?;
    let view = provider_info(&provider, Source::Api, state.catalogue.breakers());
    Ok(HttpResponse::Created().json(view))
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
    let provider = state
        .catalogue
        .replace_provider(&state.pool, &admin.0, &name, body)
        .await?;
    let view = provider_info(&provider, Source::Api, state.catalogue.breakers());
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
    state
        .catalogue
        .delete_provider(&state.pool, &admin.0, &name)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
