//! `/api/admin/keys`: every user's API keys (never their secrets); an admin revokes any.

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::{AdminUser, AuthUser};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
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
    if admin_change::apply(&mut conn, Revoke { who, id })
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("API key"));
    }
    tracing::info!(admin = %who.id, key = %id, "API key revoked by an admin");
    Ok(HttpResponse::NoContent().finish())
}

/// An admin's revocation of key `id`; its output is the key it removed, if any.
struct Revoke<'a> {
    who: &'a AuthUser,
    id: Uuid,
}

#[async_trait]
impl AdminWrite for Revoke<'_> {
    type Output = Option<api_key::OwnedKey>;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<Self::Output, Self::Error> {
        let Some(key) = api_key::find_with_owner(conn, self.id).await? else {
            return Ok(None);
        };
        Ok(api_key::delete(conn, self.id, None).await?.then_some(key))
    }

    fn trail(&self, out: &Self::Output) -> Option<NewChange> {
        let key = out.as_ref()?;
        let target = format!("{} ({}) of {}", key.key.name, key.key.prefix, key.username);
        Some(
            NewChange::by(self.who, "api_key.revoke", target)
                .id(self.id)
                .before(key),
        )
    }
}
