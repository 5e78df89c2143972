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
