//! The tool registry: name -> tool, the specs published to the model, and
//! execution of calls (parse, validate, run with timeout, isolate panics,
//! cap the result size).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument as _;

use super::validate::ArgsValidator;
use super::{builtin, truncate_chars, Tool, ToolContext, ToolError, ToolOutput};

/// Default cap on the serialised size of a tool result (16 KiB).
pub const DEFAULT_OUTPUT_CAP_BYTES: usize = 16 * 1024;
/// Raw argument strings longer than this are rejected before parsing (256 KiB).
pub const MAX_ARGUMENT_BYTES: usize = 256 * 1024;
/// Longest accepted tool name (OpenAI-compatible function name rules).
const MAX_TOOL_NAME_LEN: usize = 64;
/// Longest error message forwarded to the model.
const MAX_ERROR_CHARS: usize = 2000;

/// A tool as advertised to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpecView {
    /// Tool name.
    pub name: String,
    /// Tool description.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// How a call ended, for logs, metrics and the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool returned a result.
    Ok,
    /// Unknown tool, invalid arguments, or the tool failed/panicked.
    Error,
    /// The tool exceeded its timeout and was aborted.
    Timeout,
    /// The tool refused the call ([`ToolError::NotPermitted`]).
    Refused,
}

impl Outcome {
    /// Lower-case name (`ok`, `error`, `timeout`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Refused => "refused",
        }
    }
}

/// Everything known about one executed call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutedCall {
    /// The envelope to send back to the model (see [`ToolOutput::to_model_string`]).
    pub output: ToolOutput,
    /// How the call ended.
    pub outcome: Outcome,
    /// [`ToolError::code`] when the call did not succeed.
    pub error_code: Option<&'static str>,
    /// Wall-clock time spent in `execute` (parsing, validation and the call).
    pub duration: Duration,
    /// Size of the serialised result data before truncation (0 on error).
    pub result_bytes: usize,
    /// Whether the result data was cut to the output cap.
    pub truncated: bool,
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A tool with this name is already registered.
    #[error("a tool named '{0}' is already registered")]
    Duplicate(String),
    /// The name is empty, too long or has characters other than `[A-Za-z0-9_-]`.
    #[error("invalid tool name '{0}': use 1-64 characters from [A-Za-z0-9_-]")]
    InvalidName(String),
    /// The tool's parameter schema does not compile.
    #[error("tool '{name}' has an invalid parameter schema: {reason}")]
    InvalidSchema {
        /// Tool name.
        name: String,
        /// Compiler message.
        reason: String,
    },
}

#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    validator: Arc<ArgsValidator>,
    spec: ToolSpecView,
    /// Characters of `spec.parameters` as JSON, counted once (every turn estimates them).
    schema_chars: usize,
}

#[derive(Clone)]
struct Inner {
    tools: BTreeMap<String, Entry>,
    output_cap: usize,
}

/// Registry of callable tools. Cheap to clone (an `Arc` inside); register
/// tools at start-up, then share clones across requests.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.tools.keys().collect::<Vec<_>>())
            .field("output_cap", &self.inner.output_cap)
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry with the default output cap.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                tools: BTreeMap::new(),
                output_cap: DEFAULT_OUTPUT_CAP_BYTES,
            }),
        }
    }

    /// A registry holding every built-in tool (see [`builtin::all`]).
    pub fn builtin(config: &builtin::BuiltinConfig) -> Result<Self, RegisterError> {
        let mut registry = Self::new();
        for tool in builtin::all(config) {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Set the default cap (bytes of serialised result data) for tools that
    /// do not set [`Tool::output_cap_bytes`].
    pub fn with_output_cap(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.inner).output_cap = bytes;
        self
    }

    /// The default output cap in bytes.
    pub fn output_cap(&self) -> usize {
        self.inner.output_cap
    }

    /// Add a tool; its schema is compiled once here and cached.
    ///
    /// Clones made before this call do not see the new tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let name = tool.name().to_owned();
        let name = name.as_str();
        let valid_name = !name.is_empty()
            && name.len() <= MAX_TOOL_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(RegisterError::InvalidName(name.to_owned()));
        }
        if self.inner.tools.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        let parameters = tool.parameters();
        let validator =
            ArgsValidator::new(&parameters).map_err(|reason| RegisterError::InvalidSchema {
                name: name.to_owned(),
                reason,
            })?;
        let schema_chars = parameters.to_string().chars().count();
        let spec = ToolSpecView {
            name: name.to_owned(),
            description: tool.description().to_owned(),
            parameters,
        };
        Arc::make_mut(&mut self.inner).tools.insert(
            name.to_owned(),
            Entry {
                tool,
                validator: Arc::new(validator),
                spec,
                schema_chars,
            },
        );
        Ok(())
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.tools.get(name).map(|e| Arc::clone(&e.tool))
    }

    /// Specs of all tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpecView> {
        // BTreeMap iterates in key order.
        self.inner.tools.values().map(|e| e.spec.clone()).collect()
    }

    /// The tools named in `allowed`, in name order, each with the length of its parameter
    /// schema as JSON in characters (for token estimates), without copying anything.
    pub fn allowed_specs<'a>(
        &'a self,
        allowed: &'a [String],
    ) -> impl Iterator<Item = (&'a ToolSpecView, usize)> + 'a {
        self.inner
            .tools
            .values()
            .filter(|e| super::policy::allows(allowed, &e.spec.name))
            .map(|e| (&e.spec, e.schema_chars))
    }

    /// Adds every tool of `other` not already here (MCP tools next to the built-ins); their
    /// compiled schemas are shared, not recompiled. Returns the names that clashed.
    pub fn merge(&mut self, other: &Registry) -> Vec<String> {
        let mut clashes = Vec::new();
        if other.inner.tools.is_empty() {
            return clashes;
        }
        let inner = Arc::make_mut(&mut self.inner);
        for (name, entry) in &other.inner.tools {
            if inner.tools.contains_key(name) {
                clashes.push(name.clone());
            } else {
                inner.tools.insert(name.clone(), entry.clone());
            }
        }
        clashes
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// Run the tool `name` with the model-supplied JSON `raw_arguments`.
    ///
    /// Never panics and never returns early: every failure is reported in the
    /// returned [`ExecutedCall`]. Steps: look up the tool (`unknown_tool`),
    /// parse the arguments, where an empty string means `{}` and anything but a
    /// JSON object is `invalid_arguments`; validate against the schema
    /// (`invalid_arguments` naming the field); run the call in its own task
    /// under [`Tool::timeout`] (`timeout`; the task is aborted at its next
    /// await point), with a panic mapped to `failed` ("tool panicked"); finally
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
        let entry = self
            .inner
            .tools
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(truncate_chars(name, MAX_TOOL_NAME_LEN)))?;
        let args = parse_raw_arguments(raw_arguments)?;
        entry.validator.validate(&args)?;
        Ok(args)
    }

    /// Lookup, parse, validate, run. Returns the data and the applicable cap.
    async fn run(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_arguments: &str,
    ) -> Result<(Value, usize), ToolError> {
        let entry = self
            .inner
            .tools
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(truncate_chars(name, MAX_TOOL_NAME_LEN)))?;
        let args = parse_raw_arguments(raw_arguments)?;
        entry.validator.validate(&args)?;

        let tool = Arc::clone(&entry.tool);
        let cap = tool.output_cap_bytes().unwrap_or(self.inner.output_cap);
        let timeout = tool.timeout();
        let task_ctx = ctx.clone();
        // The call keeps the caller's span (`execute_tool`), so what it sends carries its trace.
        let handle = tokio::spawn(
            async move { tool.call(&task_ctx, args).await }.instrument(tracing::Span::current()),
        );
        let abort = handle.abort_handle();
        match tokio::time::timeout(timeout, handle).await {
            Err(_elapsed) => {
                abort.abort();
                Err(ToolError::Timeout)
            }
            Ok(Err(join_err)) if join_err.is_panic() => {
                tracing::error!(tool = name, "tool panicked");
                Err(ToolError::Failed("tool panicked".to_owned()))
            }
            Ok(Err(_cancelled)) => Err(ToolError::Failed("tool was cancelled".to_owned())),
            Ok(Ok(result)) => result.map(|v| (v, cap)),
        }
    }
}

/// Parse the model's argument string into a JSON object.
fn parse_raw_arguments(raw: &str) -> Result<Value, ToolError> {
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
fn cap_data(data: Value, cap: usize) -> (Value, usize, bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::json;

    fn ctx() -> ToolContext {
        ToolContext {
            user_id: uuid::Uuid::new_v4(),
            username: "alice".into(),
            conversation_id: uuid::Uuid::new_v4(),
        }
    }

    /// Test tool with configurable behaviour.
    struct TestTool {
        name: &'static str,
        behaviour: Behaviour,
    }

    #[derive(Clone, Copy)]
    enum Behaviour {
        Echo,
        Slow,
        Panic,
        Big,
        Unicode,
        Refuse,
        Fail,
        WhoAmI,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct EchoArgs {
        /// Text to echo.
        text: String,
        /// Repeat count.
        count: Option<u32>,
    }

    #[async_trait]
    impl Tool for TestTool {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "test tool"
        }
        fn parameters(&self) -> Value {
            match self.behaviour {
                Behaviour::Echo => crate::tools::args_schema::<EchoArgs>(),
                _ => json!({"type": "object"}),
            }
        }
        fn timeout(&self) -> Duration {
            Duration::from_millis(100)
        }
        async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
            match self.behaviour {
                Behaviour::Echo => Ok(args),
                Behaviour::Slow => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(json!("late"))
                }
                Behaviour::Panic => panic!("boom"),
                Behaviour::Big => Ok(json!("a".repeat(100_000))),
                Behaviour::Unicode => Ok(json!("é".repeat(1000))),
                Behaviour::Refuse => Err(ToolError::NotPermitted("admins only".into())),
                Behaviour::Fail => Err(ToolError::Failed("disk on fire".into())),
                Behaviour::WhoAmI => Ok(json!(ctx.username)),
            }
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::new().with_output_cap(1000);
        for (name, behaviour) in [
            ("echo", Behaviour::Echo),
            ("slow", Behaviour::Slow),
            ("panicky", Behaviour::Panic),
            ("big", Behaviour::Big),
            ("unicode", Behaviour::Unicode),
            ("refuse", Behaviour::Refuse),
            ("fail", Behaviour::Fail),
            ("whoami", Behaviour::WhoAmI),
        ] {
            r.register(Arc::new(TestTool { name, behaviour })).unwrap();
        }
        r
    }

    #[tokio::test]
    async fn ok_call() {
        let call = registry()
            .execute(&ctx(), "echo", r#"{"text":"hi","count":2}"#)
            .await;
        assert_eq!(call.outcome, Outcome::Ok);
        assert_eq!(call.error_code, None);
        assert!(!call.truncated);
        assert_eq!(call.output.data, Some(json!({"text":"hi","count":2})));
        assert_eq!(call.result_bytes, r#"{"count":2,"text":"hi"}"#.len());
        // Compare parsed, so the test holds with serde_json's `preserve_order` too.
        let sent: Value = serde_json::from_str(&call.output.to_model_string()).unwrap();
        assert_eq!(
            sent,
            json!({"success": true, "data": {"count": 2, "text": "hi"}, "error": null})
        );
    }

    #[tokio::test]
    async fn context_is_passed() {
        let call = registry().execute(&ctx(), "whoami", "").await;
        assert_eq!(call.output.data, Some(json!("alice")));
    }

    #[tokio::test]
    async fn unknown_tool() {
        let call = registry().execute(&ctx(), "nope", "{}").await;
        assert_eq!(call.outcome, Outcome::Error);
        assert_eq!(call.error_code, Some("unknown_tool"));
        assert_eq!(call.output.error.as_deref(), Some("unknown tool 'nope'"));
        assert!(!call.output.success);
    }

    #[tokio::test]
    async fn invalid_json_arguments() {
        let r = registry();
        for raw in [
            "{not json",
            "[1,2]",
            "\"str\"",
            "42",
            "null",
            "{\"text\": \"a\"} trailing",
        ] {
            let call = r.execute(&ctx(), "echo", raw).await;
            assert_eq!(call.error_code, Some("invalid_arguments"), "{raw}");
            let msg = call.output.error.unwrap();
            assert!(
                msg.starts_with("invalid arguments: arguments are not valid JSON"),
                "{raw}: {msg}"
            );
        }
    }

    #[tokio::test]
    async fn empty_arguments_mean_empty_object() {
        let call = registry().execute(&ctx(), "whoami", "  ").await;
        assert_eq!(call.outcome, Outcome::Ok);
        // ...and then schema validation sees `{}`.
        let call = registry().execute(&ctx(), "echo", "").await;
        assert_eq!(
            call.output.error.as_deref(),
            Some("invalid arguments: text: is a required property")
        );
    }

    #[tokio::test]
    async fn oversized_arguments_rejected() {
        let raw = format!(r#"{{"text":"{}"}}"#, "a".repeat(MAX_ARGUMENT_BYTES));
        let call = registry().execute(&ctx(), "echo", &raw).await;
        assert_eq!(call.error_code, Some("invalid_arguments"));
        assert!(call.output.error.unwrap().contains("too large"));
    }

    #[tokio::test]
    async fn schema_violation_names_field() {
        let r = registry();
        let call = r.execute(&ctx(), "echo", r#"{"text": 5}"#).await;
        assert_eq!(call.error_code, Some("invalid_arguments"));
        let msg = call.output.error.unwrap();
        assert!(msg.starts_with("invalid arguments: text: "), "{msg}");

        let call = r
            .execute(&ctx(), "echo", r#"{"text":"a","count":-1}"#)
            .await;
        let msg = call.output.error.unwrap();
        assert!(msg.starts_with("invalid arguments: count: "), "{msg}");

        let call = r.execute(&ctx(), "echo", r#"{"text":"a","extra":1}"#).await;
        let msg = call.output.error.unwrap();
        assert_eq!(msg, "invalid arguments: extra: unknown field (not allowed)");
    }

    #[tokio::test]
    async fn timeout() {
        let started = Instant::now();
        let call = registry().execute(&ctx(), "slow", "{}").await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(call.outcome, Outcome::Timeout);
        assert_eq!(call.error_code, Some("timeout"));
        assert_eq!(
            call.output.error.as_deref(),
            Some("the tool call timed out after 100ms")
        );
    }

    #[tokio::test]
    async fn panic_is_contained() {
        let r = registry();
        let call = r.execute(&ctx(), "panicky", "{}").await;
        assert_eq!(call.outcome, Outcome::Error);
        assert_eq!(call.error_code, Some("failed"));
        assert_eq!(call.output.error.as_deref(), Some("tool panicked"));
        // The registry is still usable afterwards.
        let call = r.execute(&ctx(), "whoami", "{}").await;
        assert_eq!(call.outcome, Outcome::Ok);
    }

    #[tokio::test]
    async fn refused_and_failed() {
        let r = registry();
        let call = r.execute(&ctx(), "refuse", "{}").await;
        assert_eq!(call.outcome, Outcome::Refused);
        assert_eq!(call.error_code, Some("not_permitted"));
        assert_eq!(
            call.output.error.as_deref(),
            Some("not permitted: admins only")
        );
        let call = r.execute(&ctx(), "fail", "{}").await;
        assert_eq!(call.outcome, Outcome::Error);
        assert_eq!(call.output.error.as_deref(), Some("disk on fire"));
    }

    #[tokio::test]
    async fn truncation() {
        let call = registry().execute(&ctx(), "big", "{}").await;
        assert_eq!(call.outcome, Outcome::Ok);
        assert!(call.truncated);
        assert_eq!(call.result_bytes, 100_002);
        let data = call.output.data.unwrap();
        let s = data.as_str().unwrap();
        assert!(
            s.ends_with("\n[truncated: 1000 of 100002 bytes shown]"),
            "{s}"
        );
        assert!(s.starts_with("\"aaa"));
        assert!(call.output.success);
    }

    #[tokio::test]
    async fn truncation_respects_char_boundaries() {
        // "é" is 2 bytes; the JSON text starts with a 1-byte quote, so byte
        // 1000 falls inside a char and the cut must back off to 999.
        let call = registry().execute(&ctx(), "unicode", "{}").await;
        assert!(call.truncated);
        let data = call.output.data.unwrap();
        let s = data.as_str().unwrap();
        assert!(s.ends_with("[truncated: 999 of 2002 bytes shown]"), "{s}");
    }

    #[tokio::test]
    async fn per_tool_cap_overrides_default() {
        struct Capped;
        #[async_trait]
        impl Tool for Capped {
            fn name(&self) -> &str {
                "capped"
            }
            fn description(&self) -> &str {
                "x"
            }
            fn parameters(&self) -> Value {
                json!({"type": "object"})
            }
            fn output_cap_bytes(&self) -> Option<usize> {
                Some(10)
            }
            async fn call(&self, _: &ToolContext, _: Value) -> Result<Value, ToolError> {
                Ok(json!("0123456789abcdef"))
            }
        }
        let mut r = Registry::new();
        r.register(Arc::new(Capped)).unwrap();
        let call = r.execute(&ctx(), "capped", "{}").await;
        assert!(call.truncated);
        assert_eq!(
            call.output.data,
            Some(json!("\"012345678\n[truncated: 10 of 18 bytes shown]"))
        );
    }

    #[test]
    fn specs_sorted() {
        let names: Vec<String> = registry().specs().into_iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), 8);
    }

    #[test]
    fn register_rejects_duplicates_and_bad_names() {
        let mut r = registry();
        let dup = r.register(Arc::new(TestTool {
            name: "echo",
            behaviour: Behaviour::Echo,
        }));
        assert_eq!(dup, Err(RegisterError::Duplicate("echo".into())));
        for bad in ["", "has space", "dots.not.allowed"] {
            let res = r.register(Arc::new(TestTool {
                name: bad,
                behaviour: Behaviour::Echo,
            }));
            assert_eq!(res, Err(RegisterError::InvalidName(bad.into())));
        }
    }

    #[test]
    fn register_rejects_bad_schema() {
        struct BadSchema;
        #[async_trait]
        impl Tool for BadSchema {
            fn name(&self) -> &str {
                "bad"
            }
            fn description(&self) -> &str {
                "x"
            }
            fn parameters(&self) -> Value {
                json!({"type": 12})
            }
            async fn call(&self, _: &ToolContext, _: Value) -> Result<Value, ToolError> {
                Ok(Value::Null)
            }
        }
        let mut r = Registry::new();
        assert!(matches!(
            r.register(Arc::new(BadSchema)),
            Err(RegisterError::InvalidSchema { .. })
        ));
    }

    #[test]
    fn clones_share_tools() {
        let r = registry();
        let c = r.clone();
        assert!(c.get("echo").is_some());
        assert!(c.get("missing").is_none());
        assert_eq!(c.len(), 8);
        assert!(!c.is_empty());
    }

    #[test]
    fn builtin_registry_registers_everything() {
        let tmp = tempfile::tempdir().unwrap();
        let config = builtin::BuiltinConfig {
            workspace: Arc::new(
                crate::tools::WorkspaceStore::new(tmp.path().to_owned(), Default::default())
                    .unwrap(),
            ),
            http: Default::default(),
        };
        let r = Registry::builtin(&config).unwrap();
        let names: Vec<String> = r.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "calculator",
                "csv_stats",
                "current_time",
                "delete_file",
                "http_get",
                "list_files",
                "read_file",
                "write_file"
            ]
        );
        assert_eq!(r.output_cap(), DEFAULT_OUTPUT_CAP_BYTES);
    }
}
