//! Executing a call through the registry: parse and validate the arguments, run the tool in
//! place under its timeout with panics isolated, and cap the result's size.

use std::time::Instant;

use futures_util::FutureExt as _;
use serde_json::Value;

use super::*;

impl Registry {
    /// Run the tool `name` with the model-supplied JSON `raw_arguments`.
    ///
    /// Never panics and never returns early: every failure is reported in the
    /// returned [`ExecutedCall`]. Steps: look up the tool (`unknown_tool`),
    /// parse the arguments, where an empty string means `{}` and anything but a
    /// JSON object is `invalid_arguments`; validate against the schema
    /// (`invalid_arguments` naming the field); run the call under
    /// [`Tool::timeout`] (`timeout`; the call is dropped at its next await
    /// point), with a panic mapped to `failed` ("tool panicked"); finally
    /// cap the serialised result at the tool's or the registry's output cap.
    pub async fn execute(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_arguments: &str,
    ) -> ExecutedCall {
        let started = Instant::now();
        let result = self.run(ctx, name, raw_arguments).await;
        let duration = started.elapsed();
        match result {
            Ok((data, cap)) => {
                let (data, result_bytes, truncated) = cap_data(data, cap);
                tracing::debug!(
                    tool = name,
                    ?duration,
                    result_bytes,
                    truncated,
                    "tool call ok"
                );
                ExecutedCall {
                    output: ToolOutput::ok(data),
                    outcome: Outcome::Ok,
                    error_code: None,
                    duration,
                    result_bytes,
                    truncated,
                }
            }
            Err(err) => {
                let outcome = match err {
                    ToolError::Timeout => Outcome::Timeout,
                    ToolError::NotPermitted(_) => Outcome::Refused,
                    _ => Outcome::Error,
                };
                let message = match (&err, self.get(name)) {
                    (ToolError::Timeout, Some(tool)) => {
                        format!("the tool call timed out after {:?}", tool.timeout())
                    }
                    _ => err.to_string(),
                };
                tracing::info!(tool = name, ?duration, code = err.code(), error = %message, "tool call failed");
                ExecutedCall {
                    output: ToolOutput::err(truncate_chars(&message, MAX_ERROR_CHARS)),
                    outcome,
                    error_code: Some(err.code()),
                    duration,
                    result_bytes: 0,
                    truncated: false,
                }
            }
        }
    }

    /// Parses and validates `raw_arguments` for the tool `name` without running it: the
    /// arguments an approval shows are the ones that will pass validation when it runs.
    pub fn check_arguments(&self, name: &str, raw_arguments: &str) -> Result<Value, ToolError> {
        self.checked(name, raw_arguments).map(|(_, args)| args)
    }

    /// The tool `name` and its parsed, validated arguments.
    fn checked(&self, name: &str, raw_arguments: &str) -> Result<(&Entry, Value), ToolError> {
        let entry = self
            .inner
            .tools
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(truncate_chars(name, MAX_TOOL_NAME_LEN)))?;
        let args = parse_raw_arguments(raw_arguments)?;
        entry.validator.validate(&args)?;
        Ok((entry, args))
    }

    /// Lookup, parse, validate, run. Returns the data and the applicable cap.
    async fn run(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_arguments: &str,
    ) -> Result<(Value, usize), ToolError> {
        let (entry, args) = self.checked(name, raw_arguments)?;
        let tool = &entry.tool;
        let cap = tool.output_cap_bytes().unwrap_or(self.inner.output_cap);
        let timeout = tool.timeout();
        // Run in place rather than in a task of its own (a task hop per call was measurable on
        // the MCP path): dropping the future at the timeout cancels it at its next await
        // point, as aborting the task did, and a panic is caught here.
        let call = std::panic::AssertUnwindSafe(tool.call(ctx, args)).catch_unwind();
        match tokio::time::timeout(timeout, call).await {
            Err(_elapsed) => Err(ToolError::Timeout),
            Ok(Err(_panic)) => {
                tracing::error!(tool = name, "tool panicked");
                Err(ToolError::Failed("tool panicked".to_owned()))
            }
            Ok(Ok(result)) => result.map(|v| (v, cap)),
        }
    }
}

/// Parse the model's argument string into a JSON object.
pub(super) fn parse_raw_arguments(raw: &str) -> Result<Value, ToolError> {
    if raw.len() > MAX_ARGUMENT_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "arguments are too large ({} bytes, limit {MAX_ARGUMENT_BYTES})",
            raw.len()
        )));
    }
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let value: Value = serde_json::from_str(trimmed)
        .map_err(|e| ToolError::InvalidArguments(format!("arguments are not valid JSON: {e}")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ToolError::InvalidArguments(
            "arguments are not valid JSON: expected a JSON object".to_owned(),
        ))
    }
}

/// Cap serialised `data` at `cap` bytes.
///
/// Returns the (possibly replaced) data, the full serialised size and whether
/// it was truncated. A truncated result becomes a string holding the first
/// bytes of the JSON text (cut at a char boundary) followed by
/// `"\n[truncated: N of M bytes shown]"`.
pub(super) fn cap_data(data: Value, cap: usize) -> (Value, usize, bool) {
    let text = match serde_json::to_string(&data) {
        Ok(t) => t,
        Err(_) => return (data, 0, false),
    };
    let total = text.len();
    if total <= cap {
        return (data, total, false);
    }
    let mut end = cap.min(total);
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let shown = format!(
        "{}\n[truncated: {end} of {total} bytes shown]",
        &text[..end]
    );
    (Value::String(shown), total, true)
}
