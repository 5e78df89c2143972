//! Tools the LLM agent can call.
//!
//! A tool is a type implementing [`Tool`]: a name, a description, a JSON
//! Schema for its arguments (derived with `schemars` from a typed argument
//! struct, see [`args_schema`]) and an async [`Tool::call`].
//!
//! The [`Registry`] owns the tools, publishes their specs to the model and
//! executes calls: it parses and validates the raw arguments against the
//! schema, runs the call in its own task under a timeout, isolates panics and
//! caps the size of the result. Every call ends in a [`ToolOutput`] envelope
//! (`{"success":..,"data":..,"error":..}`) that is sent back to the model.
//!
//! Adding a built-in tool = one file in `builtin/` + one line in
//! [`builtin::all`]. Built-ins get their dependencies (the per-user
//! [`crate::files::WorkspaceStore`], the [`HttpToolConfig`]) from a [`BuiltinConfig`].

pub mod approval;
pub mod builtin;
pub mod custom_http;
pub mod html_text;
pub mod interpreter;
pub mod mcp;
pub mod net;
pub mod policy;
pub mod registry;
pub mod validate;
mod workspace_errors;

use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub use builtin::BuiltinConfig;
pub use net::HttpToolConfig;
pub use registry::{ExecutedCall, Outcome, RegisterError, Registry, ToolSpecView};
pub use validate::{args_schema, ArgsValidator};
pub use workspace_errors::IntoToolError;

/// Longest error-message fragment echoed from user/model supplied input.
const MAX_ECHO_CHARS: usize = 200;

/// Who is calling: passed to every tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    /// The user on whose behalf the agent is acting.
    pub user_id: uuid::Uuid,
    /// That user's display/login name.
    pub username: String,
    /// The conversation the call belongs to.
    pub conversation_id: uuid::Uuid,
}

/// Outcome of one call, the envelope the model sees:
/// `{"success":bool,"data":..,"error":..}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Whether the call succeeded.
    pub success: bool,
    /// The result on success (possibly a truncated string, see the registry).
    pub data: Option<Value>,
    /// A human/model readable error message on failure.
    pub error: Option<String>,
}

impl ToolOutput {
    /// A successful envelope carrying `data`.
    pub fn ok(data: Value) -> Self {
        Self {
            success: true,
            data: Some(data),
            error: None,
        }
    }

    /// A failed envelope carrying `message`.
    pub fn err(message: impl Into<String>) -> Self {
        Self {
            success: false,
            data: None,
            error: Some(message.into()),
        }
    }

    /// The JSON text sent back to the model as the tool result.
    pub fn to_model_string(&self) -> String {
        match serde_json::to_string(self) {
            Ok(s) => s,
            // Cannot happen for `Value`/`String` fields; keep a valid envelope anyway.
            Err(_) => r#"{"success":false,"data":null,"error":"failed to serialise tool output"}"#
                .to_owned(),
        }
    }
}

/// Why a tool call did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments are malformed; the message names the field,
    /// e.g. `"expression: is a required property"`.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran but could not produce a result.
    #[error("{0}")]
    Failed(String),
    /// The tool did not finish within its timeout.
    #[error("the tool call timed out")]
    Timeout,
    /// The caller is not allowed to do this.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// No tool with this name is registered.
    #[error("unknown tool '{0}'")]
    UnknownTool(String),
}

impl ToolError {
    /// Stable machine-readable code, suitable for logs/metrics/DB columns.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::InvalidArguments(_) => "invalid_arguments",
            ToolError::Failed(_) => "failed",
            ToolError::Timeout => "timeout",
            ToolError::NotPermitted(_) => "not_permitted",
            ToolError::UnknownTool(_) => "unknown_tool",
        }
    }
}

/// A capability the agent can invoke.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Unique name exposed to the model (`[A-Za-z0-9_-]{1,64}`).
    fn name(&self) -> &str;
    /// What the tool does, written for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object; derive it with [`args_schema`].
    fn parameters(&self) -> Value;
    /// Maximum wall-clock time for one call.
    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
    /// Maximum size in bytes of the serialised result; `None` = registry default.
    fn output_cap_bytes(&self) -> Option<usize> {
        None
    }
    /// The API key scope a turn needs to use the tool: a tool that reads or changes its
    /// user's own data (workspace files, documents, memory) names one; turns of an access
    /// token, or of a key with that scope, may use it.
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        None
    }
    /// Who confirms a call when the role's approval map does not name the tool: nobody,
    /// unless the tool writes what later chats trust (then the person chatting).
    fn default_approver(&self) -> crate::domain::Approver {
        crate::domain::Approver::None
    }
    /// Run the tool. `args` has already been validated against
    /// [`Tool::parameters`]; use [`parse_args`] to get the typed struct.
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError>;
}

/// Deserialise validated arguments into the tool's typed argument struct.
///
/// On failure the error names the offending field path, e.g.
/// `InvalidArguments("expression: invalid type: integer `5`, expected a string")`.
pub fn parse_args<T: DeserializeOwned>(v: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path.is_empty() || path == "." {
            "(arguments)".to_owned()
        } else {
            path
        };
        ToolError::InvalidArguments(format!(
            "{field}: {}",
            truncate_chars(&e.into_inner().to_string(), MAX_ECHO_CHARS)
        ))
    })
}

/// First `max` chars of `s`, with an ellipsis when something was cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &s[..idx]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Args {
        expression: String,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    #[test]
    fn parse_args_names_field() {
        let err = parse_args::<Args>(serde_json::json!({"expression": 5})).unwrap_err();
        match err {
            ToolError::InvalidArguments(m) => assert!(m.starts_with("expression: "), "{m}"),
            other => panic!("unexpected {other:?}"),
        }
        let err = parse_args::<Args>(serde_json::json!({"expression": "x", "inner": {"n": -1}}))
            .unwrap_err();
        assert!(err.to_string().contains("inner.n: "), "{err}");
        let err = parse_args::<Args>(serde_json::json!({})).unwrap_err();
        assert!(err.to_string().contains("expression"), "{err}");
    }

    #[test]
    fn error_codes_and_envelope() {
        assert_eq!(ToolError::Timeout.code(), "timeout");
        assert_eq!(
            ToolError::InvalidArguments("x".into()).code(),
            "invalid_arguments"
        );
        assert_eq!(ToolError::UnknownTool("x".into()).code(), "unknown_tool");
        assert_eq!(ToolError::NotPermitted("x".into()).code(), "not_permitted");
        assert_eq!(ToolError::Failed("x".into()).code(), "failed");
        let s = ToolOutput::ok(serde_json::json!({"a": 1})).to_model_string();
        assert_eq!(s, r#"{"success":true,"data":{"a":1},"error":null}"#);
        let s = ToolOutput::err("boom").to_model_string();
        assert_eq!(s, r#"{"success":false,"data":null,"error":"boom"}"#);
    }

    #[test]
    fn truncate_chars_is_char_safe() {
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("hi", 2), "hi");
    }
}
