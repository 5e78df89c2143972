//! `GET /api/admin/shares`: every live link of the server — whose conversation, how it is
//! shared, how often it was read — so an admin can see what is shared and revoke what
//! should not be (`DELETE /api/shares/{id}`, recorded in the admin trail).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::auth::AdminUser;
use crate::db;
use crate::error::ApiError;
use crate::sharing::manage::{self, AdminShareInfo};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/shares", web::get().to(list));
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Most links, 1 to 500 (default 200).
    limit: Option<i64>,
}

/// The live links, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct AdminShareList {
    items: Vec<AdminShareInfo>,
    next_cursor: Option<String>,
}

/// Every link that works now (neither revoked nor expired), newest first.
#[utoipa::path(get, path = "/api/admin/shares", tag = "admin", params(ListQuery),
    responses((status = 200, description = "The live links", body = AdminShareList)))]
async fn list(
    req: HttpRequest,
    state: web::Data<AppState>,
    _admin: AdminUser,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let now = (state.clock)();
    let limit = query.limit.unwrap_or(200).clamp(1, 500);
    let mut conn = db::conn(&state.pool).await?;
    let rows = manage::admin_list(&mut conn, now, limit).await?;
    let base = crate::routes::shares::link_base(&req, &state);
    Ok(HttpResponse::Ok().json(AdminShareList {
        items: rows
            .into_iter()
            .map(|s| AdminShareInfo::of(s, &base, now))
            .collect(),
        next_cursor: None,
    }))
}
