//! `GET /api/admin/tools`: every tool with its parameter schema: built-in, MCP (those its
//! server lists now, with `server` and `annotations`) and custom; and `sandbox`, the code
//! interpreter's isolation on this replica.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::auth::AdminUser;
use crate::db::{self, models::custom_tool};
use crate::error::ApiError;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/tools", web::get().to(list));
}

/// Every tool, built-in and custom, with its parameter schema.
#[utoipa::path(get, path = "/api/admin/tools", tag = "admin",
    responses((status = 200, description = "Tools", body = crate::openapi::schemas::ToolList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let custom = custom_tool::list(&mut conn).await?;
    let mut items: Vec<_> = state
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
    for server in state.mcp.servers() {
        for t in server.tools() {
            items.push(json!({
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "kind": "mcp",
                "server": server.config.name,
                // Who confirms its calls when no role says otherwise.
                "default_approval": if crate::tools::approval::annotated_read_only(&t.annotations) {
                    "none"
                } else {
                    "user"
                },
                "annotations": t.annotations,
            }));
        }
    }
    items.extend(custom.into_iter().map(|c| {
        json!({
            "name": c.name,
            "description": c.description,
            "parameters": c.parameters,
            "kind": "custom",
        })
    }));
    Ok(HttpResponse::Ok().json(json!({"items": items, "sandbox": state.sandbox.isolation()})))
}
