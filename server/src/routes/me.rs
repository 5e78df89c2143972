//! `GET /api/me`: who am I, which tools may I use, what budget is left, my preferences.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AuthUser;
use crate::db::{self, models::budget, models::preferences, models::role, models::user};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    use super::preferences as prefs;
    cfg.route("/me", web::get().to(me))
        .route("/me/password", web::post().to(super::auth::change_password))
        .route("/me/preferences", web::get().to(prefs::get))
        .route("/me/preferences", web::patch().to(prefs::update));
}

/// Who the caller is, which tools they may use, what budget is left, their preferences.
#[utoipa::path(get, path = "/api/me", tag = "me",
    responses((status = 200, description = "The caller", body = crate::openapi::schemas::Me)))]
async fn me(state: web::Data<AppState>, who: AuthUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let account = user::find(&mut conn, who.id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("this account no longer exists"))?;
    let listed = role::find(&mut conn, &account.role)
        .await?
        .map(|r| r.tools)
        .unwrap_or_default();
    // Server wildcards (`{server}__*`) become the tools they allow right now.
    let mut tools: Vec<String> = listed
        .iter()
        .filter(|t| crate::tools::policy::server_pattern(t).is_none())
        .cloned()
        .collect();
    let mcp = state.mcp.registry();
    for spec in mcp.specs() {
        if crate::tools::policy::allows(&listed, &spec.name) && !tools.contains(&spec.name) {
            tools.push(spec.name);
        }
    }
    let budget = budget::status(&mut conn, who.id, (state.clock)()).await?;
    let prefs = preferences::find(&mut conn, who.id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("this account no longer exists"))?;
    Ok(HttpResponse::Ok().json(json!({
        "id": account.id,
        "username": account.username,
        "role": account.role,
        "tools": tools,
        "budget": budget,
        "preferences": prefs,
    })))
}
