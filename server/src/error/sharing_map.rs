//! Sharing's refusals as HTTP answers.

use actix_web::http::StatusCode;

use super::ApiError;

impl From<crate::sharing::SharingError> for ApiError {
    fn from(e: crate::sharing::SharingError) -> Self {
        use crate::sharing::SharingError as S;
        let message = e.to_string();
        match e {
            S::NotFound(what) => ApiError::not_found(what),
            S::Gone(_) => ApiError::new(StatusCode::GONE, "share_gone", message),
            S::SignInRequired => {
                ApiError::new(StatusCode::UNAUTHORIZED, "sign_in_required", message)
            }
            S::PublicNotAllowed => {
                ApiError::new(StatusCode::FORBIDDEN, "public_share_not_allowed", message)
            }
            S::InvalidExpiry(_) => ApiError::bad_request("invalid_expires_at", message),
            S::NothingToChange => ApiError::bad_request("nothing_to_change", message),
            S::NothingToShare => ApiError::unprocessable("nothing_to_share", message),
            S::InvalidForkPoint(_) => ApiError::unprocessable("invalid_fork_point", message),
            S::Limit(_) => ApiError::conflict("limit_reached", message),
            S::RateLimited(refusal) => {
                let d = refusal.retry_after;
                let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
                ApiError::too_many("rate_limited", message, secs)
            }
            S::FileChanged => ApiError::new(StatusCode::GONE, "share_file_changed", message),
            S::Storage(detail) => ApiError::internal(anyhow::anyhow!(detail)),
            S::Db(source) => source.into(),
            S::Pool(source) => ApiError::unavailable(anyhow::anyhow!(source)),
        }
    }
}
