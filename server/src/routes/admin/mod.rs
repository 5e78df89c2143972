//! `/api/admin/*`: admin-only resources.

pub mod approvals;
pub mod assistants;
pub mod audit;
pub mod catalogue_edit;
pub mod catalogue_models;
pub mod changes;
pub mod conversations;
mod csv;
pub mod custom_tools;
pub mod keys;
pub mod mcp_servers;
pub mod models;
pub mod roles;
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
            .configure(shares::configure)
            .configure(tools::configure)
            .configure(usage::configure),
    );
}
