//! The catalogue's refusals as HTTP answers.

use actix_web::http::StatusCode;

use super::ApiError;

impl From<crate::catalogue::CatalogueError> for ApiError {
    fn from(e: crate::catalogue::CatalogueError) -> Self {
        use crate::catalogue::CatalogueError as C;
        let message = e.to_string();
        match e {
            C::NotFound(what) => ApiError::not_found(what),
            C::Configured { what, .. } => ApiError::conflict(
                if what == "model" {
                    "configured_model"
                } else {
                    "configured_provider"
                },
                message,
            ),
            C::Invalid { code, .. } => ApiError::bad_request(code, message),
            C::Conflict { code, .. } => ApiError::conflict(code, message),
            C::KeyRequired => ApiError::unprocessable("api_key_required", message),
            C::Changed => ApiError::conflict("catalogue_changed", message),
            C::UnknownModel(_) => ApiError::unprocessable("unknown_model", message),
            C::NotAllowed(_) => ApiError::new(StatusCode::FORBIDDEN, "model_not_allowed", message),
            C::Db(source) => source.into(),
            C::Pool(source) => source.into(),
        }
    }
}
