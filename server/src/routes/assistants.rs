//! `GET /api/assistants`: the assistants a user may start a chat with, showing what each
//! really gives this user — the tools its role also allows, the collections they may read.

use actix_web::{web, HttpResponse};
use diesel::sql_types::{Array, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use serde_json::json;
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/assistants", web::get().to(list));
}

#[derive(QueryableByName)]
struct Readable {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
}

/// The assistants visible to the caller's role, with their effective tools and readable
/// collections.
#[utoipa::path(get, path = "/api/assistants", tag = "me", responses(
    (status = 200, description = "`{items: [{id, name, description, version, model, tools, collections: [{id, name}]}]}`", body = Object)))]
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
    let items: Vec<_> = assistants
        .iter()
        .map(|a| {
            let collections: Vec<_> = readable
                .iter()
                .filter(|c| a.collections.contains(&c.id))
                .map(|c| json!({"id": c.id, "name": c.name}))
                .collect();
            json!({
                "id": a.id, "name": a.name, "description": a.description, "version": a.version,
                "model": a.model,
                "tools": crate::tools::policy::intersect(&a.tools, &role_tools),
                "collections": collections,
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "items": items })))
}
