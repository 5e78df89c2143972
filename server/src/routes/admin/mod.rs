//! `/api/admin/*`: admin-only resources.

pub mod approvals;
mod assistant_write;
pub mod assistants;
pub mod audit;
pub mod catalogue_edit;
pub mod catalogue_models;
pub mod changes;
pub mod conversations;
mod csv;
pub mod custom_tools;
pub mod keys;
mod mcp_server_write;
pub mod mcp_servers;
pub mod models;
pub mod role_sandbox;
pub mod role_search;
pub mod roles;
pub mod search_providers;
pub mod search_queries;
mod search_write;
pub mod shares;
pub mod tool_names;
pub mod tools;
pub mod usage;
pub mod user_delete;
pub mod user_password;
pub mod users;

use actix_web::web;

use crate::db::{self, models::role};
use crate::error::ApiError;
use crate::state::AppState;

/// 404 unless the role exists: the per-role settings routes (sandbox limits, search rules)
/// answer for real roles only.
async fn role_exists(state: &AppState, name: &str) -> Result<(), ApiError> {
    let mut conn = db::conn(&state.pool).await?;
    if !role::exists(&mut conn, name).await? {
        return Err(ApiError::not_found("role"));
    }
    Ok(())
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/admin")
            .configure(users::configure)
            .configure(approvals::configure)
            .configure(assistants::configure)
            .configure(audit::configure)
            .configure(changes::configure)
            .configure(conversations::configure)
            .configure(custom_tools::configure)
            .configure(keys::configure)
            .configure(mcp_servers::configure)
            .configure(models::configure)
            .configure(roles::configure)
            .configure(role_sandbox::configure)
            .configure(role_search::configure)
            .configure(search_providers::configure)
            .configure(search_queries::configure)
            .configure(shares::configure)
            .configure(tools::configure)
            .configure(usage::configure),
    );
}
