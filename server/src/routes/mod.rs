//! HTTP routes: thin handlers, one file per resource.

pub mod admin;
pub mod answers;
pub mod approvals;
pub mod assistants;
pub mod auth;
pub mod collection_files;
pub mod collections;
pub mod conversation_export;
mod conversation_files;
mod conversation_markdown;
pub mod conversation_read;
pub mod conversations;
mod event_stream;
pub mod files;
pub mod health;
pub mod jwks;
pub mod keys;
pub mod me;
pub mod memory;
pub mod messages;
pub mod metrics;
pub mod models;
pub mod oidc;
pub mod openai;
pub mod preferences;
pub mod scim;
mod share_page;
pub mod share_read;
pub mod shares;
pub mod table;
pub mod truncate;
pub mod turn_events;
mod upload_body;
pub mod web;

use actix_web::web as aweb;

/// Registers every API route.
pub fn configure(cfg: &mut aweb::ServiceConfig) {
    cfg.configure(health::configure)
        .configure(jwks::configure)
        .configure(metrics::configure)
        .service(
            aweb::scope("/api")
                .configure(oidc::configure)
                .configure(auth::configure)
                .configure(me::configure)
                .configure(memory::configure)
                .configure(assistants::configure)
                .configure(conversations::configure)
                .configure(messages::configure)
                .configure(truncate::configure)
                .configure(approvals::configure)
                .configure(turn_events::configure)
                .configure(models::configure)
                .configure(files::configure)
                .configure(collections::configure)
                .configure(collection_files::configure)
                .configure(shares::configure)
                .configure(share_read::configure)
                .configure(keys::configure)
                .configure(admin::configure),
        )
        .configure(scim::configure)
        .service(
            aweb::scope("/v1")
                .configure(openai::configure)
                .default_service(aweb::to(openai::error::unknown_route)),
        )
        .configure(share_page::configure_page)
        .configure(web::configure);
}
