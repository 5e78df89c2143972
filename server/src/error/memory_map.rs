//! Memory's refusals as HTTP answers.

use super::ApiError;

impl From<crate::memory::MemoryError> for ApiError {
    fn from(e: crate::memory::MemoryError) -> Self {
        use crate::memory::MemoryError as M;
        match e {
            M::Invalid(m) => ApiError::unprocessable("invalid_note", m),
            M::Full(m) => ApiError::unprocessable("memory_full", m),
            M::Off | M::OffInChat => ApiError::conflict("memory_off", e.to_string()),
            M::NotFound => ApiError::not_found("note"),
            M::Db(source) => source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;

    use super::ApiError;
    use crate::memory::MemoryError as M;

    #[test]
    fn each_refusal_keeps_its_status_and_code() {
        let cases = [
            (M::Invalid("empty".into()), 422, "invalid_note"),
            (M::Full("full".into()), 422, "memory_full"),
            (M::Off, 409, "memory_off"),
            (M::OffInChat, 409, "memory_off"),
            (M::NotFound, 404, "not_found"),
        ];
        for (e, status, code) in cases {
            let a = ApiError::from(e);
            assert_eq!(a.status, StatusCode::from_u16(status).unwrap());
            assert_eq!(a.code, code);
        }
    }
}
