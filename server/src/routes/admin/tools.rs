//! `GET /api/admin/tools`: every registered tool with its parameter schema.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AdminUser;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/tools", web::get().to(list));
}

async fn list(state: web::Data<AppState>, _admin: AdminUser) -> HttpResponse {
    let items: Vec<_> = state
        .agent
        .tools
        .specs()
        .into_iter()
        .map(|s| {
            json!({
                "name": s.name,
                "description": s.description,
                "parameters": s.parameters,
                "kind": "builtin",
            })
        })
        .collect();
    HttpResponse::Ok().json(json!({"items": items}))
}
