//! HTTP routes: thin handlers, one file per resource.

pub mod admin;
pub mod auth;
pub mod conversations;
pub mod health;
pub mod me;
pub mod messages;
pub mod models;

use actix_web::web;

/// Registers every API route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(health::configure).service(
        web::scope("/api")
            .configure(auth::configure)
            .configure(me::configure)
            .configure(conversations::configure)
            .configure(messages::configure)
            .configure(models::configure)
            .configure(admin::configure),
    );
}
