//! `GET /api/models`: the models a conversation may pick.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AuthUser;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/models", web::get().to(list));
}

async fn list(state: web::Data<AppState>, _who: AuthUser) -> HttpResponse {
    let llm = &state.settings.llm;
    HttpResponse::Ok().json(json!({
        "default": llm.model,
        "provider": llm.provider,
        "models": llm.models,
    }))
}
