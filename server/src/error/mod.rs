//! The one error type of the HTTP boundary. Every failure becomes a status plus
//! `{"error": {"code", "message"}}`; 5xx bodies never carry internal detail. The domain's
//! errors (database, turn, account) become answers in one place: [`map`].

mod assistants_map;
mod catalogue_map;
mod knowledge_map;
mod map;
mod memory_map;
mod sharing_map;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

/// An error answered to an API client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retry_after_secs: Option<u64>,
    /// Numbers a client shows with the message (a budget refusal's need and what is left).
    details: Option<serde_json::Value>,
    /// What really went wrong, logged but never sent.
    source: Option<anyhow::Error>,
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

/// A stable snake_case `code` for programs, a `message` for people, and for some codes
/// `details` with the numbers behind the message (`budget_exhausted`: [`BudgetDetails`]).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorDetail<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, required = false, nullable = false)]
    details: Option<&'a serde_json::Value>,
}

/// The `details` of a `budget_exhausted` refusal: what the message needed and what is left.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BudgetDetails {
    /// Tokens the refused message needs (an estimate of its input plus the least output).
    pub needed: i64,
    /// Tokens left in the current period (0 when the budget is used up).
    pub remaining: i64,
    pub limit: Option<i64>,
    /// When the period ends and the budget is full again (none for a `total` budget).
    pub resets_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The `details` of a `budget_exhausted` refusal by a money budget (amounts as exact
/// decimal strings).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MoneyBudgetDetails {
    pub currency: String,
    /// The most the refused message could cost (its input and the least useful output).
    pub needed: String,
    pub remaining: String,
    pub limit: String,
    pub resets_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl ApiError {
    /// A client error with its own code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after_secs: None,
            details: None,
            source: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    pub fn too_many(code: &'static str, message: impl Into<String>, retry_after_secs: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, code, message);
        e.retry_after_secs = Some(retry_after_secs.max(1));
        e
    }

    /// The database (or another dependency) cannot be reached right now.
    pub fn unavailable(source: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the service is temporarily unavailable, please retry shortly",
        );
        e.retry_after_secs = Some(2);
        e.source = Some(source.into());
        e
    }

    /// Too much work arrived at once (a bounded queue is full): retry after `retry_after_secs`.
    pub fn overloaded(message: impl Into<String>, retry_after_secs: u64) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message);
        e.retry_after_secs = Some(retry_after_secs.max(1));
        e
    }

    /// A bug or an unexpected failure: logged in full, answered with no detail.
    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "an internal error occurred",
        );
        e.source = Some(source.into());
        e
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Seconds a client should wait before trying again, when that is known.
    /// Adds the numbers behind the message (sent as `error.details`).
    pub fn with_details(mut self, details: impl Serialize) -> Self {
        self.details = serde_json::to_value(details).ok();
        self
    }

    pub fn details(&self) -> Option<&serde_json::Value> {
        self.details.as_ref()
    }

    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after_secs
    }

    /// Logs what really went wrong (5xx only), for boundaries that answer in another shape.
    pub fn log_source(&self) {
        if let Some(source) = &self.source {
            if self.status.is_server_error() {
                tracing::error!(code = self.code, error = ?source, "request failed");
            }
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.log_source();
        let mut resp = HttpResponse::build(self.status);
        if let Some(secs) = self.retry_after_secs {
            resp.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        resp.json(ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
                details: self.details.as_ref(),
            },
        })
    }
}
