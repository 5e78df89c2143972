//! Assistants' refusals as HTTP answers.

use super::ApiError;

impl From<crate::assistants::store::SaveError> for ApiError {
    fn from(e: crate::assistants::store::SaveError) -> Self {
        use crate::assistants::store::SaveError as S;
        match e {
            S::NameTaken => {
                ApiError::conflict("assistant_exists", "a live assistant already has this name")
            }
            S::NotFound => ApiError::not_found("assistant"),
            S::Db(source) => source.into(),
        }
    }
}

impl From<crate::assistants::Invalid> for ApiError {
    fn from(e: crate::assistants::Invalid) -> Self {
        ApiError::unprocessable("invalid_assistant", e.0)
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;

    use super::ApiError;
    use crate::assistants::store::SaveError as S;

    #[test]
    fn each_refusal_keeps_its_status_and_code() {
        let cases = [
            (ApiError::from(S::NameTaken), 409, "assistant_exists"),
            (ApiError::from(S::NotFound), 404, "not_found"),
            (
                ApiError::from(crate::assistants::Invalid("name: bad".into())),
                422,
                "invalid_assistant",
            ),
        ];
        for (a, status, code) in cases {
            assert_eq!(a.status, StatusCode::from_u16(status).unwrap());
            assert_eq!(a.code, code);
        }
    }
}
