//! Tests of the tool registry: registration, specs, argument checks and execution.

use super::*;
use async_trait::async_trait;
use serde_json::json;
use std::time::Instant;

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
            crate::files::WorkspaceStore::new(tmp.path().to_owned(), Default::default()).unwrap(),
        ),
        http: Default::default(),
        fetch_rules: None,
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
