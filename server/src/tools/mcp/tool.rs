//! One MCP tool as a [`Tool`]: it lives in the [`crate::tools::Registry`] next to the
//! built-ins, so argument validation, the timeout, panic isolation, the output cap, the
//! allowlist, audit rows, spans and metrics are the same code path for both.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::ServiceError;
use serde_json::{Map, Value};

use super::http_client::{IDENTITY_META_KEY, TRACEPARENT_META_KEY};
use super::identity::IdentityContext;
use super::images::{ImageKeeper, Kept};
use super::result::map_result_with;
use super::server_state::ServerShared;
use crate::tools::{Tool, ToolContext, ToolError};

/// Separator between the server's and the tool's name.
pub const SEPARATOR: &str = "__";

/// A tool offered by an MCP server.
pub struct McpTool {
    /// `{server}__{tool}`.
    pub full_name: String,
    /// The name the server knows it by.
    pub remote_name: String,
    pub description: String,
    pub input_schema: Value,
    pub server: Arc<ServerShared>,
    pub identity: Option<Arc<IdentityContext>>,
    /// Where image content is saved; without it images are only summarised.
    pub images: Option<ImageKeeper>,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.input_schema.clone()
    }

    fn timeout(&self) -> Duration {
        self.server.config.timeout()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let server = &self.server.config.name;
        let peer = self.server.peer().ok_or_else(|| {
            ToolError::Failed(format!(
                "the MCP server `{server}` is not connected{}",
                self.server
                    .last_error()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ))
        })?;
        let mut meta = Map::new();
        if let Some(tp) = traceparent() {
            meta.insert(TRACEPARENT_META_KEY.into(), Value::String(tp));
        }
        if self.server.config.forward_identity {
            let identity = self.identity.as_ref().ok_or_else(|| {
                ToolError::Failed("identity forwarding is not available".to_owned())
            })?;
            let token = identity.token_for(ctx, server).await?;
            meta.insert(IDENTITY_META_KEY.into(), Value::String(token));
        }
        let arguments = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut params =
            CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
        if !meta.is_empty() {
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        match peer.call_tool(params).await {
            Ok(result) => {
                let wire = serde_json::to_value(&result)
                    .map_err(|e| ToolError::Failed(format!("unreadable MCP result: {e}")))?;
                drop(result);
                let failed = wire.get("isError").and_then(Value::as_bool) == Some(true);
                let kept = match &self.images {
                    Some(keeper) if !failed => keeper.keep(ctx, &self.full_name, &wire).await,
                    _ => Kept::default(),
                };
                let mut data = map_result_with(&wire, &kept.blocks)?;
                kept.list_in(&mut data);
                Ok(data)
            }
            Err(ServiceError::McpError(e)) => Err(ToolError::Failed(format!(
                "the MCP server `{server}` answered with an error: {}",
                crate::tools::truncate_chars(&e.message, 500)
            ))),
            Err(e) => {
                // The session is broken (the process died, the HTTP server went away): let the
                // supervisor find out now rather than at the next notification.
                self.server.report_broken();
                Err(ToolError::Failed(format!(
                    "the MCP server `{server}` failed: {}",
                    crate::tools::truncate_chars(&e.to_string(), 300)
                )))
            }
        }
    }
}

/// W3C `traceparent` of the current span, when traces are being recorded.
fn traceparent() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// `{server}__{tool}`, when that is a valid tool name (at most 64 of `[A-Za-z0-9_-]`).
pub fn full_name(server: &str, tool: &str) -> Option<String> {
    let name = format!("{server}{SEPARATOR}{tool}");
    let valid = name.len() <= 64
        && !tool.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    valid.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            full_name("time", "get_current_time").as_deref(),
            Some("time__get_current_time")
        );
        assert_eq!(full_name("time", "has.dot"), None);
        assert_eq!(full_name("time", ""), None);
        assert_eq!(full_name("time", &"x".repeat(60)), None);
    }
}
