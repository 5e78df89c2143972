//! `GET /.well-known/jwks.json`: the public keys of the identity tokens sent to MCP servers
//! with `forward_identity`, so they can verify who the call is for.

use actix_web::{web, HttpResponse};

use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/.well-known/jwks.json", web::get().to(jwks));
}

#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "operations", security(()),
    responses((status = 200, description = "The public keys", body = crate::openapi::schemas::Jwks)))]
pub(crate) async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(state.mcp.jwks())
}
