//! `/api/admin/assistants`: the presets admins keep. Every save is a new version and an
//! admin-change row (`assistant.create`, `assistant.update`, `assistant.retire`).

use actix_web::{web, HttpResponse};
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::assistant_write::{AssistantWrite, Op};
use crate::assistants::store::{self, SaveError};
use crate::assistants::{Assistant, AssistantSpec};
use crate::auth::AdminUser;
use crate::db::models::admin_change;
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::extract::Json;
use crate::routes::answers::Items;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/assistants")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/assistants/{id}")
            .route(web::put().to(update))
            .route(web::delete().to(retire)),
    )
    .route("/assistants/{id}/versions", web::get().to(versions));
}

/// Every live assistant at its current version.
#[utoipa::path(get, path = "/api/admin/assistants", tag = "admin",
    responses((status = 200, description = "The live assistants", body = Items<Assistant>)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    Ok(HttpResponse::Ok().json(Items::of(store::list(&mut conn).await?)))
}

/// Creates an assistant (version 1).
#[utoipa::path(post, path = "/api/admin/assistants", tag = "admin", request_body = AssistantSpec,
    responses(
    (status = 201, description = "Created", body = Assistant),
    (status = 409, description = "A live assistant has the name (`assistant_exists`)", body = crate::error::ErrorBody),
    (status = 422, description = "Invalid fields, or an unknown model, tool, role or collection", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(spec): Json<AssistantSpec>,
) -> Result<HttpResponse, ApiError> {
    let spec = spec.normalized()?;
    let mut conn = db::conn(&state.pool).await?;
    check_references(&state, &mut conn, &spec).await?;
    let change = AssistantWrite {
        who: &admin.0,
        op: Op::Create(&spec),
    };
    let saved = admin_change::apply(&mut conn, change)
        .await?
        .ok_or(SaveError::NotFound)?;
    Ok(HttpResponse::Created().json(saved))
}

/// Saves a new version of an assistant.
#[utoipa::path(put, path = "/api/admin/assistants/{id}", tag = "admin", params(("id" = Uuid, Path)),
    request_body = AssistantSpec, responses(
    (status = 200, description = "The new version", body = Assistant),
    (status = 404, description = "No live assistant with this id", body = crate::error::ErrorBody),
    (status = 409, description = "Another live assistant has the name (`assistant_exists`)", body = crate::error::ErrorBody),
    (status = 422, description = "Invalid fields, or an unknown model, tool, role or collection", body = crate::error::ErrorBody)))]
async fn update(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
    Json(spec): Json<AssistantSpec>,
) -> Result<HttpResponse, ApiError> {
    let spec = spec.normalized()?;
    let mut conn = db::conn(&state.pool).await?;
    let before = store::get(&mut conn, *id)
        .await?
        .ok_or(SaveError::NotFound)?;
    check_references(&state, &mut conn, &spec).await?;
    let change = AssistantWrite {
        who: &admin.0,
        op: Op::Update {
            before: &before,
            spec: &spec,
        },
    };
    let saved = admin_change::apply(&mut conn, change)
        .await?
        .ok_or(SaveError::NotFound)?;
    Ok(HttpResponse::Ok().json(saved))
}

/// Every version of an assistant, newest first (a retired one's too).
#[utoipa::path(get, path = "/api/admin/assistants/{id}/versions", tag = "admin",
    params(("id" = Uuid, Path)), responses(
    (status = 200, description = "Its versions", body = Items<crate::assistants::store::AssistantVersion>),
    (status = 404, description = "No assistant with this id", body = crate::error::ErrorBody)))]
async fn versions(
    state: web::Data<AppState>,
    _admin: AdminUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let items = store::versions(&mut conn, *id).await?;
    if items.is_empty() {
        return Err(SaveError::NotFound.into());
    }
    Ok(HttpResponse::Ok().json(Items::of(items)))
}

/// Retires an assistant: no new chats with it, and its chats take no new messages.
#[utoipa::path(delete, path = "/api/admin/assistants/{id}", tag = "admin",
    params(("id" = Uuid, Path)), responses(
    (status = 204, description = "Retired"),
    (status = 404, description = "No live assistant with this id", body = crate::error::ErrorBody)))]
async fn retire(
    state: web::Data<AppState>,
    admin: AdminUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let before = store::get(&mut conn, *id)
        .await?
        .ok_or(SaveError::NotFound)?;
    let change = AssistantWrite {
        who: &admin.0,
        op: Op::Retire(&before),
    };
    admin_change::apply(&mut conn, change)
        .await?
        .ok_or(SaveError::NotFound)?;
    Ok(HttpResponse::NoContent().finish())
}

/// The model, tools, roles and collections a spec names must exist.
async fn check_references(
    state: &AppState,
    conn: &mut AsyncPgConnection,
    spec: &AssistantSpec,
) -> Result<(), ApiError> {
    if let Some(model) = &spec.model {
        if state.catalogue.now().get(model).is_none() {
            return Err(ApiError::unprocessable(
                "unknown_model",
                format!(
                    "no model named `{}`; see GET /api/admin/models",
                    crate::tools::truncate_chars(model, 64)
                ),
            ));
        }
    }
    super::tool_names::KnownTools::load(state, conn)
        .await?
        .check(&spec.tools)?;
    let roles = role::list(conn).await?;
    if let Some(unknown) = spec
        .visible_to_roles
        .iter()
        .find(|r| !roles.iter().any(|known| &known.name == *r))
    {
        return Err(ApiError::unprocessable(
            "unknown_role",
            format!(
                "no role named `{}`; see GET /api/admin/roles",
                crate::tools::truncate_chars(unknown, 32)
            ),
        ));
    }
    if !spec.collections.is_empty() {
        use crate::db::schema::collections;
        let found: i64 = collections::table
            .filter(collections::id.eq_any(&spec.collections))
            .count()
            .get_result(conn)
            .await?;
        if usize::try_from(found).unwrap_or(0) != spec.collections.len() {
            return Err(ApiError::unprocessable(
                "unknown_collection",
                "a collection the assistant names does not exist",
            ));
        }
    }
    Ok(())
}
