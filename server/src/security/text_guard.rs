//! Query strings are checked before any route reads them: a parameter that decodes to a NUL
//! character (Postgres stores none) gets a 400 naming it, in the SCIM error shape on the
//! SCIM routes and as a page on the browser's sign-in redirects, instead of reaching a
//! query and failing there.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{Error, ResponseError};

pub async fn refuse_nul_queries(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let Some(name) = crate::domain::text::nul_in_query(req.query_string()) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    };
    let message =
        format!("query parameter `{name}` contains a NUL character, which cannot be stored");
    let path = req.path();
    let response = if path.starts_with("/scim/") {
        crate::scim::ScimError::bad("invalidValue", message).error_response()
    } else if path.starts_with("/api/auth/oidc/") {
        // The sign-in redirects are pages in the browser: they answer in HTML.
        actix_web::HttpResponse::BadRequest()
            .content_type("text/html; charset=utf-8")
            .body(
                "<!doctype html><meta charset=\"utf-8\"><title>Sign-in failed</title>\
                 <p>This sign-in link is not valid (its query holds a NUL character). \
                 Start again from the <a href=\"/\">sign-in page</a>.</p>",
            )
    } else {
        crate::error::ApiError::bad_request("invalid_text", message).error_response()
    };
    Ok(req.into_response(response).map_into_right_body())
}
