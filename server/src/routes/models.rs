//! `GET /api/models`: the models a conversation may pick.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AuthUser;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/models", web::get().to(list));
}

/// The models a conversation may pick.
#[utoipa::path(get, path = "/api/models", tag = "me",
    responses((status = 200, description = "The models offered", body = crate::openapi::schemas::Models)))]
async fn list(state: web::Data<AppState>, _who: AuthUser) -> HttpResponse {
    let llm = &state.settings.llm;
    HttpResponse::Ok().json(json!({
        "default": llm.model,
        "provider": llm.provider,
        "models": llm.models,
    }))
}
