//! `/api/admin/*`: admin-only resources.

pub mod users;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::scope("/admin").configure(users::configure));
}
