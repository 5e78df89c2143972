//! A JSON body extractor with our error shape: 413 past the size limit, 415 for a wrong or
//! missing content type (only an empty body may omit it), 400 naming the offending field
//! for malformed JSON or wrong types, and for text holding a NUL character.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::StatusCode;
use actix_web::{dev::Payload, web, FromRequest, HttpMessage, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A request body parsed as JSON into `T`.
#[derive(Debug)]
pub struct Json<T>(pub T);

/// Default limit when the app state is not reachable (never in practice).
const FALLBACK_LIMIT: usize = 1024 * 1024;

/// Like [`Json`], but an empty body yields `T::default()` (for all-optional bodies).
#[derive(Debug)]
pub struct JsonOrDefault<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = read_body(req, payload);
        Box::pin(async move { parse(&body.await?).map(Json) })
    }
}

impl<T: DeserializeOwned + Default + 'static> FromRequest for JsonOrDefault<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = read_body(req, payload);
        Box::pin(async move {
            let body = body.await?;
            if body.iter().all(u8::is_ascii_whitespace) {
                return Ok(JsonOrDefault(T::default()));
            }
            parse(&body).map(JsonOrDefault)
        })
    }
}

/// Reads the whole body, enforcing the content type and the size limit.
fn read_body(
    req: &HttpRequest,
    payload: &mut Payload,
) -> impl Future<Output = Result<web::BytesMut, ApiError>> {
    let limit = req
        .app_data::<web::Data<AppState>>()
        .map(|s| s.settings.max_body_bytes)
        .unwrap_or(FALLBACK_LIMIT);
    // `None`: no (readable) Content-Type. Only an empty body may come without one.
    let is_json = req
        .mime_type()
        .ok()
        .flatten()
        .map(|m| m.subtype() == mime_json() || m.suffix().is_some_and(|s| s == mime_json()));
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let mut payload = payload.take();
    async move {
        if is_json == Some(false) {
            return Err(not_json());
        }
        if declared.is_some_and(|n| n > limit) {
            return Err(too_large(limit));
        }
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::bad_request("invalid_body", format!("could not read the body: {e}"))
            })?;
            if body.len() + chunk.len() > limit {
                return Err(too_large(limit));
            }
            body.extend_from_slice(&chunk);
        }
        if is_json.is_none() && !body.iter().all(u8::is_ascii_whitespace) {
            return Err(not_json());
        }
        Ok(body)
    }
}

fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "the request body must be sent with `Content-Type: application/json`",
    )
}

fn mime_json() -> actix_web::mime::Name<'static> {
    actix_web::mime::JSON
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the request body is larger than {limit} bytes"),
    )
}

/// Parses `body`, naming the field at fault.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "invalid_json",
            "the request body is empty",
        ));
    }
    refuse_nul(body)?;
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_syntax() || inner.is_eof() {
            format!("malformed JSON: {inner}")
        } else if path == "." {
            format!("invalid request body: {inner}")
        } else {
            format!("invalid value for `{path}`: {inner}")
        };
        ApiError::bad_request("invalid_json", message)
    })
}

/// Refuses a body whose text holds a NUL character (Postgres stores none), naming the field;
/// a malformed body is left to the parser to describe.
pub fn refuse_nul(body: &[u8]) -> Result<(), ApiError> {
    if !crate::domain::text::may_hold_nul(body) {
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(());
    };
    match crate::domain::text::nul_in_json(&value) {
        Some(field) => Err(ApiError::bad_request(
            "invalid_text",
            format!("`{field}` contains a NUL character, which cannot be stored"),
        )),
        None => Ok(()),
    }
}

/// Deserialises a field that may be absent (`None`), `null` (`Some(None)`) or a value.
pub fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    serde::Deserialize::deserialize(de).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Body {
        username: String,
        age: u32,
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = parse::<Body>(br#"{"username": 5, "age": 1}"#).unwrap_err();
        assert!(e.message().contains("`username`"), "{}", e.message());
    }

    #[test]
    fn missing_field_is_named() {
        let e = parse::<Body>(br#"{"username": "x"}"#).unwrap_err();
        assert!(e.message().contains("age"), "{}", e.message());
    }

    #[test]
    fn malformed_json_says_so() {
        let e = parse::<Body>(br#"{"username": "#).unwrap_err();
        assert!(e.message().starts_with("malformed JSON"), "{}", e.message());
    }
}
