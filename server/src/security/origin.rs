//! The `Origin` check for routes a browser authenticates with a cookie (refresh, logout):
//! SameSite=Strict already keeps cross-site requests from carrying the cookie; this refuses
//! a foreign `Origin` outright as a second, browser-independent line.

use actix_web::http::header;
use actix_web::HttpRequest;

use crate::error::ApiError;

/// `Ok` when the request has no `Origin` (not a browser) or its origin is the server's own
/// (same host and port as `Host`, or as `X-Forwarded-Host` when a trusted proxy sent it) or
/// one of `allowed`; 403 otherwise.
pub fn check_same_origin(
    req: &HttpRequest,
    allowed: &[String],
    trusted_proxies: &[super::IpNet],
) -> Result<(), ApiError> {
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
    let header_value = |name| {
        req.headers()
            .get(name)
            .and_then(|h| h.to_str().ok())
            .map(|h| h.trim().to_ascii_lowercase())
    };
    let via_proxy = req
        .peer_addr()
        .is_some_and(|p| trusted_proxies.iter().any(|n| n.contains(p.ip())));
    let forwarded_host = header_value("x-forwarded-host").filter(|_| via_proxy);
    let host = header_value(header::HOST.as_str());
    let origin_host = url::Url::parse(&origin).ok().and_then(|u| {
        let host = u.host_str()?.to_owned();
        Some(match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        })
    });
    match origin_host {
        Some(o) if host.as_ref() == Some(&o) || forwarded_host.as_ref() == Some(&o) => Ok(()),
        _ => Err(ApiError::forbidden(
            "cross-origin requests may not use the session cookie",
        )),
    }
}
