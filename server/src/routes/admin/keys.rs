//! `/api/admin/keys`: every user's API keys (never their secrets); an admin revokes any.

use actix_web::{web, HttpResponse};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::AsyncConnection;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::AdminUser;
use crate::db::models::admin_change::{self, NewChange};
use crate::db::{self, models::api_key};
use crate::error::ApiError;
use crate::state::AppState;

/// Most keys listed at once.
const LIST_LIMIT: i64 = 1000;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/keys", web::get().to(list))
        .route("/keys/{id}", web::delete().to(revoke));
}

/// Everyone's keys with their owners.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminKeyList {
    items: Vec<api_key::OwnedKey>,
    next_cursor: Option<String>,
}

/// Every user's keys, newest first.
#[utoipa::path(get, path = "/api/admin/keys", tag = "admin", responses(
    (status = 200, description = "All keys with their owners", body = AdminKeyList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let items = api_key::list_all(&mut conn, LIST_LIMIT).await?;
    Ok(HttpResponse::Ok().json(AdminKeyList {
        items,
        next_cursor: None,
    }))
}

/// Revokes anyone's key at once.
#[utoipa::path(delete, path = "/api/admin/keys/{id}", tag = "admin", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Revoked"),
    (status = 404, description = "No such key", body = crate::error::ErrorBody)))]
async fn revoke(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let (id, who) = (*id, &admin.0);
    let mut conn = db::conn(&state.pool).await?;
    let revoked = conn
        .transaction(|conn| {
            async move {
                let Some(key) = api_key::find_with_owner(conn, id).await? else {
                    return Ok(false);
                };
                if !api_key::delete(conn, id, None).await? {
                    return Ok(false);
                }
                let target = format!("{} ({}) of {}", key.key.name, key.key.prefix, key.username);
                let change = NewChange::by(who, "api_key.revoke", target)
                    .id(id)
                    .before(&key);
                admin_change::record(conn, change).await?;
                Ok::<_, diesel::result::Error>(true)
            }
            .scope_boxed()
        })
        .await?;
    if !revoked {
        return Err(ApiError::not_found("API key"));
    }
    tracing::info!(admin = %who.id, key = %id, "API key revoked by an admin");
    Ok(HttpResponse::NoContent().finish())
}
