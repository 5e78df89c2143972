//! `/api/admin/mcp-servers`: the MCP servers, their state and tools. Streamable HTTP servers
//! can be added, edited and removed here; stdio servers only come from the config file (an
//! API that starts programs would be remote code execution for whoever holds an admin token)
//! and are read-only here. Header values are write-only.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::mcp_server_write::{McpServerWrite, Op};
use crate::auth::AdminUser;
use crate::db;
use crate::db::models::admin_change;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::tools::mcp::{config, McpServerConfig, ServerShared, Source};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/mcp-servers")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/mcp-servers/{name}")
            .route(web::get().to(get))
            .route(web::put().to(replace))
            .route(web::delete().to(delete)),
    )
    .route("/mcp-servers/{name}/refresh", web::post().to(refresh));
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerBody {
    name: Option<String>,
    url: String,
    /// Absent on PUT: keep the stored values (they cannot be read back).
    headers: Option<std::collections::BTreeMap<String, String>>,
    enabled: Option<bool>,
    timeout_ms: Option<u64>,
    forward_identity: Option<bool>,
}

/// What the API shows of a server: never header values or environment values.
pub fn view(s: &ServerShared) -> Value {
    let c = &s.config;
    let tools: Vec<Value> = s
        .tools()
        .into_iter()
        .map(|t| json!({"name": t.name, "remote_name": t.remote_name, "description": t.description, "annotations": t.annotations}))
        .collect();
    let mut v = json!({
        "name": c.name,
        "transport": c.transport().as_str(),
        "source": s.source,
        "enabled": c.enabled,
        "timeout_ms": c.timeout_ms,
        "forward_identity": c.forward_identity,
        "status": s.status(),
        "tools": tools,
    });
    match &c.command {
        Some(cmd) => {
            v["command"] = json!(cmd);
            v["args"] = json!(c.args);
        }
        None => {
            v["url"] = json!(c.url);
            v["headers"] = json!(c.headers.keys().collect::<Vec<_>>());
        }
    }
    v
}

fn body_to_config(
    name: &str,
    body: ServerBody,
    existing: Option<&McpServerConfig>,
) -> Result<McpServerConfig, ApiError> {
    if !config::valid_server_name(name) {
        return Err(ApiError::bad_request(
            "invalid_name",
            "MCP server names match ^[a-z0-9-]{1,24}$",
        ));
    }
    let mut c = McpServerConfig::http(name, &body.url);
    c.headers = match (body.headers, existing) {
        (Some(h), _) => h,
        // Secrets are write-only: an edit that sends no headers keeps the stored ones, but
        // only while the server stays on the same origin (they were given for that one).
        (None, Some(e)) if !e.headers.is_empty() && !same_origin(e.url.as_deref(), &body.url) => {
            return Err(ApiError::unprocessable(
                "headers_required",
                "url moves the server to another origin: send its headers again \
                 (stored header values are never sent to a new origin)",
            ));
        }
        (None, Some(e)) => e.headers.clone(),
        (None, None) => Default::default(),
    };
    c.enabled = body.enabled.or(existing.map(|e| e.enabled)).unwrap_or(true);
    c.timeout_ms = body
        .timeout_ms
        .or(existing.map(|e| e.timeout_ms))
        .unwrap_or(config::DEFAULT_TIMEOUT_MS);
    c.forward_identity = body
        .forward_identity
        .or(existing.map(|e| e.forward_identity))
        .unwrap_or(false);
    c.validate()
        .map_err(|e| ApiError::bad_request("invalid_mcp_server", e))?;
    Ok(c)
}

/// Whether two URLs share scheme, host and port (unparsable ones never do).
fn same_origin(a: Option<&str>, b: &str) -> bool {
    let origin = |u: &str| reqwest::Url::parse(u).ok().map(|u| u.origin());
    match (a.and_then(origin), origin(b)) {
        (Some(a), Some(b)) => a.is_tuple() && a == b,
        _ => false,
    }
}

/// The server `name`, or 404.
fn find(state: &AppState, name: &str) -> Result<std::sync::Arc<ServerShared>, ApiError> {
    state
        .mcp
        .server(name)
        .ok_or_else(|| ApiError::not_found("MCP server"))
}

/// 409 for servers from the config file: they are changed there.
fn editable(s: &ServerShared) -> Result<(), ApiError> {
    match s.source {
        Source::Api => Ok(()),
        Source::Config => Err(ApiError::conflict(
            "configured_server",
            format!(
                "`{}` comes from the config file; change it there",
                s.config.name
            ),
        )),
    }
}

#[utoipa::path(get, path = "/api/admin/mcp-servers", tag = "admin",
    responses((status = 200, description = "MCP servers", body = crate::openapi::schemas::McpServerList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let items: Vec<Value> = state.mcp.servers().iter().map(|s| view(s)).collect();
    Ok(HttpResponse::Ok().json(json!({"items": items, "next_cursor": null})))
}

#[utoipa::path(get, path = "/api/admin/mcp-servers/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 200, description = "The server", body = crate::openapi::schemas::McpServer)))]
async fn get(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(view(find(&state, &name)?.as_ref())))
}

#[utoipa::path(post, path = "/api/admin/mcp-servers", tag = "admin",
    request_body = crate::openapi::schemas::McpServerBody, responses(
    (status = 201, description = "Created (and checked once)", body = crate::openapi::schemas::McpServer),
    (status = 409, description = "A server of that name exists", body = crate::error::ErrorBody),
    (status = 422, description = "Not an acceptable server", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<ServerBody>,
) -> Result<HttpResponse, ApiError> {
    let name = body
        .name
        .clone()
        .ok_or_else(|| ApiError::bad_request("invalid_name", "name is required"))?;
    let config = body_to_config(&name, body, None)?;
    if state.mcp.server(&name).is_some() {
        return Err(ApiError::conflict(
            "mcp_server_exists",
            format!("an MCP server named `{name}` exists"),
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    let change = McpServerWrite {
        state: &state,
        who: &admin.0,
        op: Op::Create(config),
    };
    if !admin_change::apply(&mut conn, change).await? {
        return Err(ApiError::conflict(
            "mcp_server_exists",
            format!("an MCP server named `{name}` exists"),
        ));
    }
    drop(conn);
    // Give it its first check so the answer shows whether it connected.
    state.mcp.refresh(&name).await;
    Ok(HttpResponse::Created().json(view(find(&state, &name)?.as_ref())))
}

#[utoipa::path(put, path = "/api/admin/mcp-servers/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = crate::openapi::schemas::McpServerBody, responses(
    (status = 200, description = "Replaced", body = crate::openapi::schemas::McpServer),
    (status = 409, description = "It comes from the config file", body = crate::error::ErrorBody),
    (status = 422, description = "Not an acceptable server", body = crate::error::ErrorBody)))]
async fn replace(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<ServerBody>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    if body.name.as_deref().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(
            "invalid_name",
            "the name in the body differs from the path; servers cannot be renamed",
        ));
    }
    let current = find(&state, &name)?;
    editable(&current)?;
    let config = body_to_config(&name, body, Some(&current.config))?;
    let mut conn = db::conn(&state.pool).await?;
    let change = McpServerWrite {
        state: &state,
        who: &admin.0,
        op: Op::Update {
            before: current.config.clone(),
            config,
        },
    };
    if !admin_change::apply(&mut conn, change).await? {
        return Err(ApiError::not_found("MCP server"));
    }
    drop(conn);
    state.mcp.refresh(&name).await;
    Ok(HttpResponse::Ok().json(view(find(&state, &name)?.as_ref())))
}

#[utoipa::path(delete, path = "/api/admin/mcp-servers/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 204, description = "Deleted"),
    (status = 409, description = "It comes from the config file", body = crate::error::ErrorBody)))]
async fn delete(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let current = find(&state, &name)?;
    editable(&current)?;
    let mut conn = db::conn(&state.pool).await?;
    let change = McpServerWrite {
        state: &state,
        who: &admin.0,
        op: Op::Delete(current.config.clone()),
    };
    admin_change::apply(&mut conn, change).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/api/admin/mcp-servers/{name}/refresh", tag = "admin", params(("name" = String, Path)),
    responses((status = 200, description = "Reconnected and its tools re-read", body = crate::openapi::schemas::McpServer)))]
async fn refresh(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    find(&state, &name)?;
    state.mcp.refresh(&name).await;
    Ok(HttpResponse::Ok().json(view(find(&state, &name)?.as_ref())))
}
