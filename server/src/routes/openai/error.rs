//! The `/v1` boundary's error: OpenAI's shape `{"error": {"message", "type", "param",
//! "code"}}` and statuses, so OpenAI clients raise their usual exceptions.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};

use crate::error::ApiError;
use crate::llm::openai::wire;

/// An error answered to an OpenAI client.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    kind: &'static str,
    code: String,
    message: String,
    param: Option<String>,
    retry_after_secs: Option<u64>,
    /// Tells OpenAI's SDKs not to retry (`x-should-retry: false`): retrying would not help
    /// (an exhausted budget) or would run a finished turn again.
    final_answer: bool,
}

impl OpenAiError {
    /// 400 `invalid_request_error`, naming the parameter at fault.
    pub fn invalid(param: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code: code.to_owned(),
            message: message.into(),
            param: Some(param.into()),
            retry_after_secs: None,
            final_answer: false,
        }
    }

    /// 404 for a model this server does not offer.
    pub fn unknown_model(model: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "model_not_found".into(),
            message: format!("The model `{model}` does not exist or you do not have access to it."),
            ..Self::invalid("model", "", "")
        }
    }

    /// 404 for a path under `/v1` this server does not serve (OpenAI has many more).
    pub fn unknown_route() -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "unknown_url".into(),
            message: "this server serves only /v1/models and /v1/chat/completions".into(),
            param: None,
            ..Self::invalid("", "", "")
        }
    }

    /// A turn that failed after it started (the model or the database): 502 or 503, never
    /// retried by the SDKs (the call is stored; a retry would be a new call).
    pub fn turn_failed(code: &str, message: &str) -> Self {
        let unavailable = matches!(code, "unavailable" | "shutdown");
        Self {
            status: if unavailable {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::BAD_GATEWAY
            },
            kind: "server_error",
            code: code.to_owned(),
            message: message.to_owned(),
            param: None,
            retry_after_secs: None,
            final_answer: true,
        }
    }
}

impl From<crate::turn::TurnError> for OpenAiError {
    fn from(e: crate::turn::TurnError) -> Self {
        ApiError::from(e).into()
    }
}

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        e.log_source();
        let status = e.status_code();
        let (kind, code) = match (status.as_u16(), e.code()) {
            (401, _) => ("invalid_request_error", "invalid_api_key"),
            (403, c) => ("permission_error", c),
            (429, "budget_exhausted") => ("insufficient_quota", "insufficient_quota"),
            (429, _) => ("rate_limit_error", "rate_limit_exceeded"),
            (s, c) if s >= 500 => ("server_error", c),
            (_, c) => ("invalid_request_error", c),
        };
        Self {
            status,
            kind,
            code: code.to_owned(),
            message: e.message().to_owned(),
            param: None,
            retry_after_secs: e.retry_after_secs(),
            final_answer: e.code() == "budget_exhausted",
        }
    }
}

impl std::fmt::Display for OpenAiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.code, self.message)
    }
}

/// The error object as it goes on the wire (also inside a stream).
pub fn object(kind: &str, code: &str, message: &str, param: Option<String>) -> wire::ErrorBody {
    wire::ErrorBody {
        error: wire::ErrorObject {
            message: message.to_owned(),
            kind: Some(kind.to_owned()),
            param,
            code: Some(wire::ErrorCode::Text(code.to_owned())),
        },
    }
}

impl ResponseError for OpenAiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut resp = HttpResponse::build(self.status);
        if let Some(secs) = self.retry_after_secs {
            resp.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if self.final_answer {
            resp.insert_header(("x-should-retry", "false"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        resp.json(object(
            self.kind,
            &self.code,
            &self.message,
            self.param.clone(),
        ))
    }
}

/// The `/v1` scope's answer to any other path, in OpenAI's shape.
pub async fn unknown_route() -> HttpResponse {
    OpenAiError::unknown_route().error_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;

    fn body(e: OpenAiError) -> (u16, serde_json::Value, Option<String>) {
        let resp = e.error_response();
        let status = resp.status().as_u16();
        let retry = resp
            .headers()
            .get("x-should-retry")
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        let bytes = match resp.into_body().try_into_bytes() {
            Ok(b) => b,
            Err(_) => panic!("a streamed error body"),
        };
        (status, serde_json::from_slice(&bytes).unwrap(), retry)
    }

    #[test]
    fn api_errors_take_openais_types_and_codes() {
        let (s, v, retry) = body(ApiError::too_many("budget_exhausted", "used up", 60).into());
        assert_eq!(s, 429);
        assert_eq!(v["error"]["type"], "insufficient_quota");
        assert_eq!(v["error"]["code"], "insufficient_quota");
        assert_eq!(retry.as_deref(), Some("false"));
        let (s, v, retry) = body(ApiError::too_many("budget_in_use", "busy", 2).into());
        assert_eq!((s, retry), (429, None));
        assert_eq!(v["error"]["code"], "rate_limit_exceeded");
        let (s, v, _) = body(ApiError::unauthorized("no").into());
        assert_eq!(s, 401);
        assert_eq!(v["error"]["code"], "invalid_api_key");
        assert!(v["error"]["param"].is_null());
        let (s, v, _) = body(OpenAiError::unknown_model("x"));
        assert_eq!(s, 404);
        assert_eq!(v["error"]["param"], "model");
        let (s, v, _) = body(ApiError::internal(anyhow::anyhow!("secret detail")).into());
        assert_eq!(s, 500);
        assert_eq!(v["error"]["type"], "server_error");
        assert!(!v.to_string().contains("secret detail"));
    }
}
