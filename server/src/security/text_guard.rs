//! Query strings are checked before any route reads them: a parameter that decodes to a NUL
//! character (Postgres stores none) gets a 400 naming it, in the SCIM error shape on the
//! SCIM routes, instead of reaching a query and failing there.

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
    let response = if req.path().starts_with("/scim/") {
        crate::scim::ScimError::bad("invalidValue", message).error_response()
    } else {
        crate::error::ApiError::bad_request("invalid_text", message).error_response()
    };
    Ok(req.into_response(response).map_into_right_body())
}
