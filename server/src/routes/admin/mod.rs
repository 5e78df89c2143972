//! `/api/admin/*`: admin-only resources.

pub mod roles;
pub mod tools;
pub mod usage;
pub mod users;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/admin")
            .configure(users::configure)
            .configure(roles::configure)
            .configure(tools::configure)
            .configure(usage::configure),
    );
}
