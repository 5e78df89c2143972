//! The `Origin` check for routes a browser authenticates with a cookie (refresh, logout):
//! SameSite=Strict already keeps cross-site requests from carrying the cookie; this refuses
//! a foreign `Origin` outright as a second, browser-independent line.

use actix_web::http::header;
use actix_web::HttpRequest;

use crate::error::ApiError;

/// `Ok` when the request has no `Origin` (not a browser) or its origin is the server's own
/// (same host and port as `Host`) or one of `allowed`; 403 otherwise.
pub fn check_same_origin(req: &HttpRequest, allowed: &[String]) -> Result<(), ApiError> {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .unwrap_or("")
        .trim_end_matches('/')
        .to_ascii_lowercase();
    if allowed.contains(&origin) {
        return Ok(());
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    let origin_host = url::Url::parse(&origin).ok().and_then(|u| {
        let host = u.host_str()?.to_owned();
        Some(match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        })
    });
    match (origin_host, host) {
        (Some(o), Some(h)) if o == h => Ok(()),
        _ => Err(ApiError::forbidden(
            "cross-origin requests may not use the session cookie",
        )),
    }
}
