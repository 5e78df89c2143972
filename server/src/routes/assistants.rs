//! `GET /api/assistants`: the assistants a user may start a chat with, showing what each
//! really gives this user — the tools its role also allows, the collections they may read.

use actix_web::{web, HttpResponse};
use diesel::sql_types::{Array, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::routes::answers::Items;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/assistants", web::get().to(list));
}

/// An assistant as one user may use it.
#[derive(Serialize, utoipa::ToSchema)]
struct Offered {
    id: Uuid,
    name: String,
    description: String,
    version: i32,
    model: Option<String>,
    /// Its tools that the user's role also allows.
    tools: Vec<String>,
    /// Its collections that the user may read.
    collections: Vec<Readable>,
}

/// A collection the user may read.
#[derive(Clone, Serialize, QueryableByName, utoipa::ToSchema)]
struct Readable {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
}

/// The assistants visible to the caller's role, with their effective tools and readable
/// collections.
#[utoipa::path(get, path = "/api/assistants", tag = "me", responses(
    (status = 200, description = "The assistants the caller may start a chat with", body = Items<Offered>)))]
async fn list(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let assistants = crate::assistants::store::visible_to(&mut conn, &who.role).await?;
    let role_tools = role::find(&mut conn, &who.role)
        .await?
        .map(|r| r.tools)
        .unwrap_or_default();
    let wanted: Vec<Uuid> = assistants
        .iter()
        .flat_map(|a| a.collections.iter().copied())
        .collect();
    let readable: Vec<Readable> = if wanted.is_empty() {
        Vec::new()
    } else {
        diesel::sql_query(format!(
            "SELECT c.id, c.name FROM collections c WHERE c.id = ANY($2) AND {}",
            crate::knowledge::collections::READABLE_BY_1
        ))
        .bind::<SqlUuid, _>(who.id)
        .bind::<Array<SqlUuid>, _>(&wanted)
        .load(&mut conn)
        .await?
    };
    let items: Vec<Offered> = assistants
        .into_iter()
        .map(|a| Offered {
            collections: readable
                .iter()
                .filter(|c| a.collections.contains(&c.id))
                .cloned()
                .collect(),
            tools: crate::tools::policy::intersect(&a.tools, &role_tools),
            id: a.id,
            name: a.name,
            description: a.description,
            version: a.version,
            model: a.model,
        })
        .collect();
    Ok(HttpResponse::Ok().json(Items::of(items)))
}
