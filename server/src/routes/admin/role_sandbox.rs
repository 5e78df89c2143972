//! `/api/admin/roles/{name}/sandbox`: a role's code interpreter limits. Each tightens
//! `[sandbox]` for the role's users (null: the server's setting); a value above the server's
//! is refused, so an admin can only make a role's runs smaller. Changes are in the trail.

use actix_web::{web, HttpResponse};
use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use serde::Deserialize;

use crate::auth::AdminUser;
use crate::db;
use crate::db::models::admin_change::{self, AdminWrite, NewChange};
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use crate::tools::interpreter::role_limits::{self, RoleSandbox};

use super::role_exists;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/roles/{name}/sandbox")
            .route(web::get().to(get))
            .route(web::put().to(put)),
    );
}

/// A role's limits as written to the API; each absent or null field is the server's setting.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleSandboxBody {
    timeout_secs: Option<i64>,
    memory_mb: Option<i64>,
    max_processes: Option<i64>,
    max_output_bytes: Option<i64>,
    max_files: Option<i64>,
    max_file_bytes: Option<i64>,
}

#[utoipa::path(get, path = "/api/admin/roles/{name}/sandbox", tag = "admin",
    params(("name" = String, Path)), responses(
    (status = 200, description = "The role's sandbox limits (null: the server's setting)", body = RoleSandbox),
    (status = 404, description = "No such role", body = crate::error::ErrorBody)))]
pub async fn get(
    state: web::Data<AppState>,
    _admin: AdminUser,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    role_exists(&state, &name).await?;
    let mut conn = db::conn(&state.pool).await?;
    let found = role_limits::for_role(&mut conn, &name)
        .await?
        .unwrap_or_default();
    Ok(HttpResponse::Ok().json(found))
}

/// `value` checked against the server's `[sandbox]` `field` of `ceiling`: positive (400) and
/// not above it (422).
fn within(field: &str, value: Option<i64>, ceiling: u64) -> Result<Option<i64>, ApiError> {
    let Some(v) = value else { return Ok(None) };
    if v <= 0 {
        return Err(ApiError::bad_request(
            "invalid_sandbox_limits",
            format!("{field} must be a positive number, or null for the server's setting"),
        ));
    }
    if u64::try_from(v).map_or(true, |v| v > ceiling) {
        return Err(ApiError::unprocessable(
            "above_server_sandbox_limit",
            format!(
                "{field} {v} is above the server's sandbox.{field} ({ceiling}); a role may only \
                 tighten the server's limits"
            ),
        ));
    }
    Ok(Some(v))
}

/// An `i32` column's value (every ceiling fits, see `SandboxSettings::validate`).
fn small(v: Option<i64>) -> Option<i32> {
    v.and_then(|v| i32::try_from(v).ok())
}

#[utoipa::path(put, path = "/api/admin/roles/{name}/sandbox", tag = "admin",
    params(("name" = String, Path)), request_body = RoleSandboxBody, responses(
    (status = 200, description = "Saved", body = RoleSandbox),
    (status = 400, description = "A value is not a positive number", body = crate::error::ErrorBody),
    (status = 404, description = "No such role", body = crate::error::ErrorBody),
    (status = 422, description = "A value is above the server's `[sandbox]` setting", body = crate::error::ErrorBody)))]
pub async fn put(
    state: web::Data<AppState>,
    admin: AdminUser,
    name: web::Path<String>,
    Json(body): Json<RoleSandboxBody>,
) -> Result<HttpResponse, ApiError> {
    let s = &state.settings.sandbox;
    let new = RoleSandbox {
        timeout_secs: small(within("timeout_secs", body.timeout_secs, s.timeout_secs)?),
        memory_mb: small(within("memory_mb", body.memory_mb, s.memory_mb)?),
        max_processes: small(within(
            "max_processes",
            body.max_processes,
            s.max_processes.into(),
        )?),
        max_output_bytes: small(within(
            "max_output_bytes",
            body.max_output_bytes,
            s.max_output_bytes as u64,
        )?),
        max_files: small(within("max_files", body.max_files, s.max_files.into())?),
        max_file_bytes: within("max_file_bytes", body.max_file_bytes, s.max_file_bytes)?,
    };
    role_exists(&state, &name).await?;
    let mut conn = db::conn(&state.pool).await?;
    let before = role_limits::for_role(&mut conn, &name).await?;
    let mut change = NewChange::by(&admin.0, "role.sandbox", name.as_str()).after(&new);
    if let Some(b) = before {
        change = change.before(b);
    }
    let write = SandboxWrite {
        role: &name,
        limits: &new,
        change,
    };
    admin_change::apply(&mut conn, write).await?;
    Ok(HttpResponse::Ok().json(new))
}

/// A role's limits saved, with its trail row, in one transaction.
struct SandboxWrite<'a> {
    role: &'a str,
    limits: &'a RoleSandbox,
    change: NewChange,
}

#[async_trait]
impl AdminWrite for SandboxWrite<'_> {
    type Output = ();
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<(), Self::Error> {
        role_limits::save(conn, self.role, self.limits).await
    }

    fn trail(&self, _: &()) -> Option<NewChange> {
        Some(self.change.clone())
    }
}
