//! `GET /s/{id}`: the page that shows a shared conversation (`web/share.html`, which fetches
//! `GET /api/shares/{id}` and draws it). Served under the UI's Content-Security-Policy, never
//! cached (the URL is a secret and the link may be revoked at any moment), never indexed,
//! never framed. The page itself says nothing about the link: whether it exists and may be
//! read is the API's answer, so a wrong id gets the same page (which then says so).

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use rust_embed::RustEmbed;

/// Only the page's own document; its script and styles are ordinary UI assets.
#[derive(RustEmbed)]
#[folder = "../web/"]
#[include = "share.html"]
struct Page;

/// Registered before the UI's catch-all (not under `/api`: a person opens this address).
pub fn configure_page(cfg: &mut web::ServiceConfig) {
    cfg.route("/s/{id}", web::get().to(page));
}

async fn page() -> HttpResponse {
    let Some(file) = Page::get("share.html") else {
        return actix_web::ResponseError::error_response(&crate::error::ApiError::not_found(
            "page",
        ));
    };
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            "Content-Security-Policy",
            super::web::CONTENT_SECURITY_POLICY,
        ))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("X-Robots-Tag", "noindex, nofollow"))
        .body(file.data.into_owned())
}
