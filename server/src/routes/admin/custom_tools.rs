//! `/api/admin/tools/custom`: admin-defined HTTP tools. Header values are write-only.

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::{AdminUser, AuthUser};
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::db::{
    self,
    models::custom_tool::{self, CustomToolRow},
};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::tools::ArgsValidator;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/tools/custom")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/tools/custom/{name}")
            .route(web::get().to(get))
            .route(web::put().to(replace))
            .route(web::delete().to(delete)),
    );
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ToolBody {
    name: Option<String>,
    description: String,
    parameters: Value,
    method: String,
    url_template: String,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    timeout_ms: Option<i64>,
}

/// What the API shows: header names only.
fn view(row: &CustomToolRow) -> Value {
    let header_names: Vec<&String> = row
        .headers
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    json!({
        "name": row.name, "description": row.description, "parameters": row.parameters,
        "method": row.method, "url_template": row.url_template, "headers": header_names,
        "timeout_ms": row.timeout_ms, "created_at": row.created_at, "updated_at": row.updated_at,
    })
}

/// Saves `row` with its admin-audit row; `before` is the tool as it was.
async fn save_audited(
    conn: &mut AsyncPgConnection,
    who: &AuthUser,
    before: Option<&CustomToolRow>,
    row: &CustomToolRow,
) -> Result<CustomToolRow, ApiError> {
    Ok(admin_change::apply(conn, Save { who, before, row }).await?)
}

/// A tool created (no `before`) or replaced.
struct Save<'a> {
    who: &'a AuthUser,
    before: Option<&'a CustomToolRow>,
    row: &'a CustomToolRow,
}

#[async_trait]
impl AdminWrite for Save<'_> {
    type Output = CustomToolRow;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<CustomToolRow, Self::Error> {
        custom_tool::upsert(conn, self.row).await
    }

    fn trail(&self, saved: &CustomToolRow) -> Option<NewChange> {
        let kind = if self.before.is_some() {
            "custom_tool.update"
        } else {
            "custom_tool.create"
        };
        let mut after = view(saved);
        // Header values never enter the trail; that they changed does.
        if self.before.is_some_and(|b| b.headers != self.row.headers) {
            after["header_values_changed"] = json!(true);
        }
        let change = NewChange::by(self.who, kind, &saved.name).after(after);
        Some(match self.before {
            Some(b) => change.before(view(b)),
            None => change,
        })
    }
}

/// A tool deleted; the output says whether it was there.
struct Delete<'a> {
    who: &'a AuthUser,
    existing: CustomToolRow,
}

#[async_trait]
impl AdminWrite for Delete<'_> {
    type Output = bool;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<bool, Self::Error> {
        custom_tool::delete(conn, &self.existing.name).await
    }

    fn trail(&self, deleted: &bool) -> Option<NewChange> {
        deleted.then(|| {
            NewChange::by(self.who, "custom_tool.delete", &self.existing.name)
                .before(view(&self.existing))
        })
    }
}

fn validate(state: &AppState, name: &str, body: ToolBody) -> Result<CustomToolRow, ApiError> {
    let name_ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(ApiError::bad_request(
            "invalid_name",
            "tool names are 1 to 64 of A-Z, a-z, 0-9, `_`, `-`",
        ));
    }
    if name.contains(crate::tools::mcp::tool::SEPARATOR) {
        return Err(ApiError::unprocessable(
            "reserved_name",
            format!(
                "`{}` is reserved for MCP tools (`{{server}}{0}{{tool}}`): name the tool without it",
                crate::tools::mcp::tool::SEPARATOR
            ),
        ));
    }
    if state.tools.get(name).is_some() {
        return Err(ApiError::conflict(
            "tool_exists",
            format!("`{name}` is a built-in tool"),
        ));
    }
    if body.description.trim().is_empty() || body.description.len() > 2000 {
        return Err(ApiError::bad_request(
            "invalid_description",
            "description must be 1 to 2000 characters",
        ));
    }
    if body.parameters.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ApiError::bad_request(
            "invalid_parameters",
            "parameters must be a JSON Schema with \"type\": \"object\"",
        ));
    }
    ArgsValidator::new(&body.parameters).map_err(|e| {
        ApiError::bad_request(
            "invalid_parameters",
            format!("parameters is not a valid JSON Schema: {e}"),
        )
    })?;
    let method = body.method.to_ascii_uppercase();
    if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str()) {
        return Err(ApiError::bad_request(
            "invalid_method",
            "method must be GET, POST, PUT, PATCH or DELETE",
        ));
    }
    if template_origin(&body.url_template).is_none() {
        return Err(ApiError::bad_request(
            "invalid_url",
            "url_template must be an http(s) URL with a fixed scheme, host and port \
             (placeholders may appear only in the path and query)",
        ));
    }
    if let Some(missing) = placeholders(&body.url_template).into_iter().find(|p| {
        body.parameters
            .get("properties")
            .and_then(|ps| ps.get(*p))
            .is_none()
    }) {
        return Err(ApiError::bad_request(
            "unknown_placeholder",
            format!(
                "url_template uses {{{missing}}}, which is not a parameter: add \"{missing}\" to \
                 the schema's properties"
            ),
        ));
    }
    if body.headers.values().any(|v| !v.is_string()) {
        return Err(ApiError::bad_request(
            "invalid_headers",
            "header values must be strings",
        ));
    }
    let timeout_ms = body.timeout_ms.unwrap_or(10_000);
    if !(100..=120_000).contains(&timeout_ms) {
        return Err(ApiError::bad_request(
            "invalid_timeout",
            "timeout_ms must be between 100 and 120000",
        ));
    }
    Ok(CustomToolRow {
        name: name.to_owned(),
        description: body.description,
        parameters: body.parameters,
        method,
        url_template: body.url_template,
        headers: Value::Object(body.headers),
        timeout_ms,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    })
}

/// The origin (`https://host:port`) of a URL template, or `None` when it is not http(s) or
/// a placeholder sits in its scheme, host or port.
fn template_origin(template: &str) -> Option<String> {
    let (scheme, rest) = template.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if scheme.contains(['{', '}']) || authority.contains(['{', '}']) {
        return None;
    }
    let u = url::Url::parse(&template.replace(['{', '}'], "")).ok()?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return None;
    }
    Some(u.origin().ascii_serialization())
}

/// The `{name}` placeholders of a URL template, in order.
fn placeholders(template: &str) -> Vec<&str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

fn has_headers(row: &CustomToolRow) -> bool {
    row.headers.as_object().is_some_and(|m| !m.is_empty())
}

/// Every custom tool.
#[utoipa::path(get, path = "/api/admin/tools/custom", tag = "admin",
    responses((status = 200, description = "Custom tools", body = crate::openapi::schemas::CustomToolList)))]
async fn list(state: web::Data<AppState>, _admin: AdminUser) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let rows = custom_tool::list(&mut conn).await?;
    Ok(HttpResponse::Ok().json(json!({"items": rows.iter().map(view).collect::<Vec<_>>()})))
}

/// One custom tool.
#[utoipa::path(get, path = "/api/admin/tools/custom/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 200, description = "The tool", body = crate::openapi::schemas::CustomTool)))]
async fn get(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let row = custom_tool::find(&mut conn, &name)
        .await?
        .ok_or_else(|| ApiError::not_found("tool"))?;
    Ok(HttpResponse::Ok().json(view(&row)))
}

/// Defines a custom HTTP tool.
#[utoipa::path(post, path = "/api/admin/tools/custom", tag = "admin", request_body = ToolBody, responses(
    (status = 201, description = "Created", body = crate::openapi::schemas::CustomTool),
    (status = 400, description = "An invalid name or definition", body = crate::error::ErrorBody),
    (status = 409, description = "A tool of that name exists", body = crate::error::ErrorBody),
    (status = 422, description = "The name holds `__`, reserved for MCP tools (`reserved_name`)", body = crate::error::ErrorBody)))]
async fn create(
    state: web::Data<AppState>,
    admin: AdminUser,
    Json(body): Json<ToolBody>,
) -> Result<HttpResponse, ApiError> {
    let name = body.name.clone().unwrap_or_default();
    let row = validate(&state, &name, body)?;
    let mut conn = db::conn(&state.pool).await?;
    if custom_tool::find(&mut conn, &name).await?.is_some() {
        return Err(ApiError::conflict(
            "tool_exists",
            format!("a custom tool named `{name}` exists; PUT to replace it"),
        ));
    }
    let saved = save_audited(&mut conn, &admin.0, None, &row).await?;
    Ok(HttpResponse::Created().json(view(&saved)))
}

/// Creates or replaces a custom tool; no `headers` keeps the stored ones.
#[utoipa::path(put, path = "/api/admin/tools/custom/{name}", tag = "admin", params(("name" = String, Path)),
    request_body = ToolBody, responses(
    (status = 200, description = "Replaced", body = crate::openapi::schemas::CustomTool),
    (status = 201, description = "Created", body = crate::openapi::schemas::CustomTool),
    (status = 400, description = "An invalid name or definition", body = crate::error::ErrorBody),
    (status = 409, description = "A built-in tool has that name", body = crate::error::ErrorBody),
    (status = 422, description = "The name holds `__`, reserved for MCP tools (`reserved_name`)", body = crate::error::ErrorBody)))]
async fn replace(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<ToolBody>,
) -> Result<HttpResponse, ApiError> {
    if body.name.as_deref().is_some_and(|n| n != name.as_str()) {
        return Err(ApiError::bad_request(
            "invalid_name",
            "the name in the body differs from the one in the path",
        ));
    }
    let mut conn = db::conn(&state.pool).await?;
    let existing = custom_tool::find(&mut conn, &name).await?;
    let keep_headers = body.headers.is_empty();
    let mut row = validate(&state, &name, body)?;
    if keep_headers {
        // Secrets are write-only: an edit that sends no headers keeps the stored ones, but
        // only while the tool stays on the same origin (they were given for that one).
        if let Some(e) = existing.as_ref().filter(|e| has_headers(e)) {
            if template_origin(&e.url_template) != template_origin(&row.url_template) {
                return Err(ApiError::unprocessable(
                    "headers_required",
                    "url_template moves the tool to another origin: send its headers again \
                     (stored header values are never sent to a new origin)",
                ));
            }
            row.headers = e.headers.clone();
        }
    }
    let saved = save_audited(&mut conn, &admin.0, existing.as_ref(), &row).await?;
    let status = if existing.is_some() {
        actix_web::http::StatusCode::OK
    } else {
        actix_web::http::StatusCode::CREATED
    };
    Ok(HttpResponse::build(status).json(view(&saved)))
}

/// Deletes a custom tool.
#[utoipa::path(delete, path = "/api/admin/tools/custom/{name}", tag = "admin", params(("name" = String, Path)),
    responses((status = 204, description = "Deleted")))]
async fn delete(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    let Some(existing) = custom_tool::find(&mut conn, &name).await? else {
        return Err(ApiError::not_found("tool"));
    };
    let deleted = admin_change::apply(
        &mut conn,
        Delete {
            who: &admin.0,
            existing,
        },
    )
    .await?;
    if deleted {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::not_found("tool"))
    }
}
