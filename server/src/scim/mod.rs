//! SCIM 2.0 provisioning (RFC 7643/7644): the identity provider creates, updates,
//! deactivates and deletes accounts and pushes groups. Only accounts SCIM created are
//! visible here; a deactivated account's sessions and running turns end at once.

pub mod filter;
pub mod groups;
pub mod patch;
pub mod users;
pub mod wire;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use wire::ERROR_SCHEMA;

/// The SCIM media type.
pub const CONTENT_TYPE: &str = "application/scim+json";
/// Largest page a list returns.
pub const MAX_PAGE: i64 = 200;

/// An error in SCIM's shape: `{"schemas": [Error], "status": "409", "scimType", "detail"}`.
#[derive(Debug, thiserror::Error)]
#[error("{detail}")]
pub struct ScimError {
    pub status: StatusCode,
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    pub fn new(
        status: StatusCode,
        scim_type: Option<&'static str>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            status,
            scim_type,
            detail: detail.into(),
        }
    }

    pub fn bad(scim_type: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some(scim_type), detail)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, None, format!("no such {what}"))
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, Some("uniqueness"), detail)
    }
}

/// Database errors are judged where every other boundary's are ([`crate::error`]): a lost
/// connection is 503, anything else 500 with nothing internal said.
impl From<diesel::result::Error> for ScimError {
    fn from(e: diesel::result::Error) -> Self {
        crate::error::ApiError::from(e).into()
    }
}

impl From<crate::db::DbError> for ScimError {
    fn from(e: crate::db::DbError) -> Self {
        crate::error::ApiError::from(e).into()
    }
}

impl From<crate::error::ApiError> for ScimError {
    fn from(e: crate::error::ApiError) -> Self {
        e.log_source();
        let status = actix_web::ResponseError::status_code(&e);
        Self::new(status, None, e.message().to_owned())
    }
}

impl ResponseError for ScimError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let body = wire::ErrorOut {
            schemas: [ERROR_SCHEMA],
            status: self.status.as_u16().to_string(),
            scim_type: self.scim_type,
            detail: self.detail.clone(),
        };
        let mut resp = HttpResponse::build(self.status);
        resp.content_type(CONTENT_TYPE);
        if self.status == StatusCode::UNAUTHORIZED {
            resp.insert_header(("WWW-Authenticate", "Bearer"));
        }
        resp.json(body)
    }
}

/// `startIndex` (1-based) and `count` as an offset and a limit.
pub fn page(start_index: Option<i64>, count: Option<i64>) -> (i64, i64) {
    let offset = start_index.unwrap_or(1).max(1) - 1;
    let limit = count.unwrap_or(100).clamp(0, MAX_PAGE);
    (offset, limit)
}
