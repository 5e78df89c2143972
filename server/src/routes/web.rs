//! The browser UI: static files from `web/`, embedded into the binary (read from disk in
//! debug builds), served with a strict Content-Security-Policy. Unknown non-API paths get
//! `index.html` so client-side routes survive a reload.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "../web/"]
#[exclude = "node_modules/*"]
struct Assets;

/// No inline script, no remote content: model output rendered in the page cannot run code
/// or load anything from elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; \
object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route("/{path:.*}", web::get().to(asset));
}

async fn index() -> HttpResponse {
    serve("index.html").unwrap_or_else(|| HttpResponse::NotFound().finish())
}

async fn asset(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let path = path.into_inner();
    if path.starts_with("api/") || path == "api" {
        return actix_web::ResponseError::error_response(&crate::error::ApiError::not_found(
            "route",
        ));
    }
    if let Some(resp) = serve(&path) {
        return resp;
    }
    // A path with a file extension that does not exist is a real 404; anything else is a
    // client-side route.
    let looks_like_file = path
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains('.'));
    if looks_like_file || req.method() != actix_web::http::Method::GET {
        return actix_web::ResponseError::error_response(&crate::error::ApiError::not_found(
            "file",
        ));
    }
    index().await
}

fn serve(path: &str) -> Option<HttpResponse> {
    let file = Assets::get(path)?;
    let mime = file.metadata.mimetype().to_owned();
    let cache = if path == "index.html" {
        "no-cache"
    } else {
        "public, max-age=300"
    };
    Some(
        HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, mime))
            .insert_header((header::CACHE_CONTROL, cache))
            .insert_header(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
            .insert_header(("X-Frame-Options", "DENY"))
            .body(file.data.into_owned()),
    )
}
