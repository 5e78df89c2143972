//! `GET /api/admin/approvals`: every user's tool calls that wait (or waited) for a decision,
//! the admin console's queue. Admins decide through `POST /api/approvals/{id}`.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::auth::AdminUser;
use crate::db::{self, models::user};
use crate::error::ApiError;
use crate::routes::approvals::{page, ApprovalQuery};
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/approvals", web::get().to(list));
}

/// The user filter of the admin listing.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct UserQuery {
    /// A user id or a username.
    user: Option<String>,
}

/// Everyone's approvals, newest first.
#[utoipa::path(get, path = "/api/admin/approvals", tag = "admin",
    params(crate::routes::approvals::ApprovalQuery, UserQuery),
    responses((status = 200, description = "A page of approvals",
        body = crate::openapi::schemas::ApprovalPage)))]
async fn list(
    state: web::Data<AppState>,
    _admin: AdminUser,
    q: web::Query<ApprovalQuery>,
    u: web::Query<UserQuery>,
) -> Result<HttpResponse, ApiError> {
    let user_id = match u.user.as_deref().filter(|u| !u.is_empty()) {
        None => None,
        Some(name) => match uuid::Uuid::parse_str(name) {
            Ok(id) => Some(id),
            Err(_) => {
                let mut conn = db::conn(&state.pool).await?;
                match user::find_by_username(&mut conn, name).await? {
                    Some(found) => Some(found.id),
                    // Nobody by that name: an id nobody has lists nothing.
                    None => Some(uuid::Uuid::nil()),
                }
            }
        },
    };
    page(&state, q.filter(user_id)?).await
}
