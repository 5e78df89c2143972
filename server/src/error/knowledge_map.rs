//! Knowledge's refusals as HTTP answers.

use actix_web::http::StatusCode;

use super::ApiError;

impl From<crate::knowledge::KnowledgeError> for ApiError {
    fn from(e: crate::knowledge::KnowledgeError) -> Self {
        use crate::knowledge::KnowledgeError as K;
        let message = e.to_string();
        match e {
            K::Unavailable(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "knowledge_unavailable",
                message,
            ),
            K::CollectionNotFound => ApiError::not_found("collection"),
            K::ConversationNotFound => ApiError::not_found("conversation"),
            K::FileNotFound => ApiError::not_found("file"),
            K::Forbidden(m) => ApiError::forbidden(m),
            K::CollectionExists(_) => ApiError::conflict("collection_exists", message),
            K::Invalid(_) => ApiError::bad_request("invalid_request", message),
            K::FileTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "file_too_large", message)
            }
            K::Unsupported(_) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_file_type",
                message,
            ),
            K::EmptyFile => ApiError::bad_request("empty_file", message),
            K::Limit(_) => ApiError::conflict("limit_reached", message),
            K::Budget {
                code, retry_after, ..
            } => ApiError::too_many(code, message, retry_after),

            K::Quota { .. } => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "knowledge_quota_exceeded",
                message,
            ),
            K::Db(source) => source.into(),
            K::Pool(source) => ApiError::unavailable(anyhow::anyhow!(source)),
        }
    }
}
