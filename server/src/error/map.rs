//! The one place where the domain's errors become HTTP answers: the database's
//! ([`DbError`]), the turn's ([`TurnError`]), the account and session operations'
//! ([`AuthError`]) and an account's refusal ([`Rejection`]).

use actix_web::http::StatusCode;

use super::{ApiError, BudgetDetails, MoneyBudgetDetails};
use crate::auth::AuthError;
use crate::db::models::user::Rejection;
use crate::db::{DbError, PoolError};
use crate::turn::error::BudgetShortfall;
use crate::turn::TurnError;

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable(source) => ApiError::unavailable(source),
            DbError::Overloaded {
                message,
                retry_after_secs,
            } => ApiError::overloaded(message, retry_after_secs),
            DbError::TimedOut(source) => {
                tracing::warn!(error = %source, "a request's statement ran out of time");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_timeout",
                    "the database took too long to answer this request; narrow it or retry later",
                )
            }
            DbError::Conflict(source) => {
                // Nothing was written; a client retry succeeds. Never a 500: not a bug.
                tracing::warn!(error = %source, "a request lost a transaction conflict");
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    "the server was busy with a conflicting change; retry in a moment",
                );
                e.retry_after_secs = Some(1);
                e
            }
            DbError::Query(source) => ApiError::internal(source),
        }
    }
}

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        DbError::from(e).into()
    }
}

impl From<PoolError> for ApiError {
    fn from(e: PoolError) -> Self {
        DbError::from(e).into()
    }
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        ApiError::unauthorized(match r {
            Rejection::NoAccount => "invalid or expired access token",
            Rejection::Disabled => "this account is disabled",
            Rejection::Revoked => "this access token has been revoked; sign in again",
            Rejection::KeyRevoked => "invalid API key",
            Rejection::KeyExpired => "this API key has expired",
        })
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        let message = e.to_string();
        match e {
            AuthError::InvalidUsername => ApiError::bad_request("invalid_username", message),
            AuthError::InvalidPassword(_) => ApiError::bad_request("invalid_password", message),
            AuthError::UnknownRole(_) => ApiError::unprocessable("unknown_role", message),
            AuthError::UsernameTaken => ApiError::conflict("username_taken", message),
            AuthError::Throttled {
                message,
                retry_after_secs,
            } => ApiError::too_many("too_many_attempts", message, retry_after_secs),
            AuthError::BadCredentials | AuthError::BadRefreshToken | AuthError::AccountGone => {
                ApiError::unauthorized(message)
            }
            AuthError::ExternalAccount => ApiError::conflict("external_account", message),
            // 403, not 401: the caller's session is fine, only the password given is not.
            AuthError::WrongPassword => {
                ApiError::new(StatusCode::FORBIDDEN, "wrong_password", message)
            }
            AuthError::Db(e) => e.into(),
            AuthError::Internal(e) => ApiError::internal(e),
        }
    }
}

impl From<TurnError> for ApiError {
    fn from(e: TurnError) -> Self {
        let message = e.to_string();
        match e {
            TurnError::InvalidContent { .. } => ApiError::bad_request("invalid_content", message),
            TurnError::Attachment { code, message } => ApiError::unprocessable(code, message),
            TurnError::NotFound(what) => ApiError::not_found(what),
            TurnError::Account(r) => r.into(),
            TurnError::ConversationFull { .. } => ApiError::conflict("conversation_full", message),
            TurnError::ModelNotAllowed { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "model_not_allowed", message)
            }
            TurnError::ModelUnavailable(_) => ApiError::conflict("model_unavailable", message),
            TurnError::AssistantUnavailable(_) => {
                ApiError::conflict("assistant_unavailable", message)
            }
            TurnError::Busy => ApiError::conflict(
                "turn_in_progress",
                "a reply is already being generated in this conversation; wait for it or cancel it",
            ),
            TurnError::ApprovalPending { admin: true } => ApiError::conflict(
                "approval_pending",
                "An admin must approve or deny the pending call first",
            )
            .with_details(serde_json::json!({"approver": "admin"})),
            TurnError::ApprovalPending { admin: false } => ApiError::conflict(
                "approval_pending",
                "the reply in this conversation waits for a tool call to be approved or denied; \
                 decide it (or wait for it to expire) before sending a new message",
            )
            .with_details(serde_json::json!({"approver": "user"})),
            TurnError::BudgetExhausted(shortfall) => budget_exhausted(&shortfall),
            TurnError::MoneyExhausted(shortfall) => money_exhausted(&shortfall),
            TurnError::ModelUnpriced { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "model_unpriced", message)
            }
            TurnError::BudgetInUse => ApiError::too_many(
                "budget_in_use",
                "replies already in progress hold the rest of your token budget; try again when they finish",
                2,
            ),
            TurnError::IdempotencyKeyReused => {
                ApiError::unprocessable("idempotency_key_reused", message)
            }
            TurnError::AdminApproval => {
                ApiError::new(StatusCode::FORBIDDEN, "admin_approval", message)
            }
            TurnError::NotYourApproval => {
                ApiError::new(StatusCode::FORBIDDEN, "not_your_approval", message)
            }
            TurnError::AlreadyDecided { .. } => ApiError::conflict("already_decided", message),
            TurnError::ApprovalExpired => ApiError::conflict("approval_expired", message),
            TurnError::Db(e) => e.into(),
            TurnError::Internal(source) => ApiError::internal(source),
        }
    }
}

/// 429 for a message the budget cannot cover: the numbers, and when it resets. "Used up"
/// only when nothing is left.
fn budget_exhausted(s: &BudgetShortfall) -> ApiError {
    let when = match s.resets_at {
        Some(t) => format!(
            "it resets at {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        None => "ask an admin to raise it".to_owned(),
    };
    let wait = s
        .resets_at
        .map(|t| (t - chrono::Utc::now()).num_seconds().max(1))
        .unwrap_or(3600);
    let message = if s.left <= 0 {
        format!("your token budget is used up; {when}")
    } else {
        format!(
            "this message needs about {} tokens and your budget has {} left; {when}",
            s.need, s.left
        )
    };
    let details = BudgetDetails {
        needed: s.need,
        remaining: s.left.max(0),
        limit: s.limit,
        resets_at: s.resets_at,
    };
    ApiError::too_many(
        "budget_exhausted",
        message,
        u64::try_from(wait).unwrap_or(3600),
    )
    .with_details(details)
}

fn resets_phrase(resets_at: Option<chrono::DateTime<chrono::Utc>>) -> (String, u64) {
    let when = match resets_at {
        Some(t) => format!(
            "it resets at {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        None => "ask an admin to raise it".to_owned(),
    };
    let wait = resets_at
        .map(|t| (t - chrono::Utc::now()).num_seconds().max(1))
        .unwrap_or(3600);
    (when, u64::try_from(wait).unwrap_or(3600))
}

fn money_exhausted(s: &crate::turn::error::MoneyShortfall) -> ApiError {
    let (when, wait) = resets_phrase(s.resets_at);
    let message = if s.left <= rust_decimal::Decimal::ZERO {
        format!(
            "your money budget of {} {} is used up; {when}",
            s.limit.normalize(),
            s.currency
        )
    } else {
        format!(
            "this message may cost up to {} {cur} and your budget has {} {cur} left; {when}",
            s.need.normalize(),
            s.left.normalize(),
            cur = s.currency
        )
    };
    let details = MoneyBudgetDetails {
        currency: s.currency.clone(),
        needed: s.need.normalize().to_string(),
        remaining: s.left.normalize().to_string(),
        limit: s.limit.normalize().to_string(),
        resets_at: s.resets_at,
    };
    ApiError::too_many("budget_exhausted", message, wait).with_details(details)
}

#[cfg(test)]
mod tests {
    use actix_web::ResponseError;

    use super::*;

    #[test]
    fn an_overloaded_database_is_503_with_retry_after() {
        let e: ApiError = DbError::Overloaded {
            message: "too many replies are starting at once; retry shortly",
            retry_after_secs: 1,
        }
        .into();
        assert_eq!(e.status_code(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.code(), "overloaded");
        let response = e.error_response();
        let retry = response.headers().get("retry-after").map(|v| v.to_str());
        assert!(matches!(retry, Some(Ok("1"))), "{retry:?}");
    }

    #[test]
    fn turn_errors_keep_their_wire_codes() {
        let cases: [(TurnError, StatusCode, &str); 6] = [
            (TurnError::Busy, StatusCode::CONFLICT, "turn_in_progress"),
            (
                TurnError::ApprovalPending { admin: true },
                StatusCode::CONFLICT,
                "approval_pending",
            ),
            (
                TurnError::BudgetInUse,
                StatusCode::TOO_MANY_REQUESTS,
                "budget_in_use",
            ),
            (
                TurnError::AdminApproval,
                StatusCode::FORBIDDEN,
                "admin_approval",
            ),
            (
                TurnError::NotFound("turn"),
                StatusCode::NOT_FOUND,
                "not_found",
            ),
            (
                TurnError::Db(DbError::Unavailable(anyhow::anyhow!("down"))),
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
            ),
        ];
        for (error, status, code) in cases {
            let e = ApiError::from(error);
            assert_eq!((e.status_code(), e.code()), (status, code));
        }
    }

    #[test]
    fn a_spent_budget_says_used_up_and_when_it_resets() {
        let e = ApiError::from(TurnError::BudgetExhausted(BudgetShortfall {
            need: 100,
            left: 0,
            limit: Some(1000),
            resets_at: None,
        }));
        assert_eq!(e.code(), "budget_exhausted");
        assert!(e.message().contains("used up"), "{}", e.message());
        assert!(e.retry_after_secs().is_some());
    }

    #[test]
    fn auth_errors_keep_their_wire_codes() {
        let cases: [(AuthError, StatusCode, &str); 5] = [
            (
                AuthError::InvalidUsername,
                StatusCode::BAD_REQUEST,
                "invalid_username",
            ),
            (
                AuthError::UnknownRole("x".into()),
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_role",
            ),
            (
                AuthError::BadCredentials,
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
            ),
            (
                AuthError::WrongPassword,
                StatusCode::FORBIDDEN,
                "wrong_password",
            ),
            (
                AuthError::ExternalAccount,
                StatusCode::CONFLICT,
                "external_account",
            ),
        ];
        for (error, status, code) in cases {
            let e = ApiError::from(error);
            assert_eq!((e.status_code(), e.code()), (status, code));
        }
        let throttled = ApiError::from(AuthError::Throttled {
            message: "wait",
            retry_after_secs: 3,
        });
        assert_eq!(throttled.code(), "too_many_attempts");
        assert_eq!(throttled.retry_after_secs(), Some(3));
    }
}
