//! Traces and metrics: GenAI-convention spans for a turn with a tool call (captured by the
//! SDK's in-memory exporter), and `/metrics` counters that move by exactly the traffic sent.

use std::sync::OnceLock;
use std::time::Duration;

use agentchat_tests::*;
use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::export::trace::SpanData;
use opentelemetry_sdk::testing::trace::InMemorySpanExporter;
use serde_json::{json, Value};

pub(crate) fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = opentelemetry_sdk::trace::TracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        agentchat::telemetry::install(agentchat::config::LogFormat::Text, Some(provider), "error");
        exporter
    })
}

pub(crate) fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

#[tokio::test]
async fn a_turn_is_one_trace_with_genai_spans_and_the_audit_row_points_at_it() {
    let exporter = exporter();
    let app = TestApp::builder().start().await;
    let s = app.signed_up("tracer").await;
    let conv = app.new_conversation(&s.access).await;
    let parent_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/messages"))
        .header(
            "traceparent",
            format!("00-{parent_trace}-00f067aa0ba902b7-01"),
        )
        .json(&json!({"content": "what time is it"}))
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    assert!(body.contains("event: done"));
    let trace_id = TraceId::from_hex(parent_trace).unwrap();
    let mut spans = Vec::new();
    for _ in 0..50 {
        spans = exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace_id)
            .collect();
        if spans.iter().any(|s| s.name == "invoke_agent") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let find = |name: &str| -> Vec<&SpanData> { spans.iter().filter(|s| s.name == name).collect() };
    let http = find("POST /api/conversations/{id}/messages");
    assert_eq!(
        http.len(),
        1,
        "names: {:?}",
        spans.iter().map(|s| s.name.to_string()).collect::<Vec<_>>()
    );
    let http = http[0];
    assert_eq!(http.span_kind, SpanKind::Server);
    assert_eq!(
        http.parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
    assert_eq!(
        attr(http, "http.route").as_deref(),
        Some("/api/conversations/{id}/messages")
    );

    let agent = find("invoke_agent");
    assert_eq!(agent.len(), 1);
    let agent = agent[0];
    assert_eq!(agent.parent_span_id, http.span_context.span_id());
    assert_eq!(attr(agent, "gen_ai.conversation.id"), Some(conv.clone()));

    let chats = find("chat demo");
    assert_eq!(chats.len(), 2, "two model calls");
    for c in &chats {
        assert_eq!(c.span_kind, SpanKind::Client);
        assert_eq!(c.parent_span_id, agent.span_context.span_id());
        assert_eq!(attr(c, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(attr(c, "gen_ai.provider.name").as_deref(), Some("demo"));
        assert_eq!(attr(c, "gen_ai.request.model").as_deref(), Some("demo"));
        assert_eq!(attr(c, "gen_ai.response.model").as_deref(), Some("demo"));
        assert!(attr(c, "gen_ai.usage.input_tokens").is_some());
        assert!(attr(c, "gen_ai.usage.output_tokens").is_some());
        assert!(attr(c, "gen_ai.response.finish_reasons").is_some());
    }
    let tools = find("execute_tool current_time");
    assert_eq!(tools.len(), 1);
    let tool = tools[0];
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(tool.parent_span_id, agent.span_context.span_id());
    assert_eq!(
        attr(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(tool, "gen_ai.tool.name").as_deref(),
        Some("current_time")
    );
    assert_eq!(attr(tool, "gen_ai.tool.type").as_deref(), Some("function"));
    assert!(attr(tool, "gen_ai.tool.call.id").is_some());
    // No content unless capture is enabled.
    assert!(attr(tool, "gen_ai.tool.call.arguments").is_none());
    for span in &spans {
        for kv in &span.attributes {
            assert!(
                !kv.value.as_str().contains("what time is it"),
                "prompt text in {}",
                span.name
            );
        }
    }
    // The audit row carries the tool span's ids.
    let admin_rows: Value = {
        // The first user is the admin.
        app.get_as(&s.access, "/api/admin/audit?tool=current_time")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    };
    let row = &admin_rows["items"][0];
    assert_eq!(row["trace_id"], parent_trace);
    assert_eq!(row["span_id"], tool.span_context.span_id().to_string());
}

/// The value of a sample, whatever order the exposition writes its labels in.
fn metric(text: &str, name: &str, labels: &str) -> f64 {
    let sorted = |l: &str| {
        let mut parts: Vec<String> = l
            .split("\",")
            .map(|p| p.trim_end_matches('"').to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        parts.sort();
        parts
    };
    let wanted = sorted(labels);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, ls) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            (n == name && sorted(ls) == wanted).then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_move_by_exactly_the_traffic_sent() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("ops").await;
    let member = app.signed_up("user1").await;
    app.set_budget(&admin.access, member.user_id, Some(10))
        .await;
    let before = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let conv = app.new_conversation(&admin.access).await;
    app.chat(&admin.access, &conv, "what time is it").await;
    app.chat(&admin.access, &conv, "what is 6*7").await;
    let mconv = app.new_conversation(&member.access).await;
    let r = app.send_message(&member.access, &mconv, "hi").await;
    assert_eq!(r.status(), 429);
    let after = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert!(after.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let after = after.text().await.unwrap();
    let delta =
        |name: &str, labels: &str| metric(&after, name, labels) - metric(&before, name, labels);
    assert_eq!(
        delta("agentchat_chat_turns_total", r#"finish_reason="stop""#),
        2.0
    );
    assert_eq!(
        delta(
            "agentchat_tool_calls_total",
            r#"tool="current_time",outcome="ok""#
        ),
        1.0
    );
    assert_eq!(
        delta(
            "agentchat_tool_calls_total",
            r#"tool="calculator",outcome="ok""#
        ),
        1.0
    );
    assert_eq!(
        delta(
            "agentchat_model_calls_total",
            r#"provider="demo",model="demo",outcome="ok""#
        ),
        4.0
    );
    assert_eq!(delta("agentchat_budget_refusals_total", ""), 1.0);
    assert_eq!(
        delta(
            "agentchat_http_requests_total",
            r#"route="/api/conversations/{id}/messages",method="POST",status="200""#
        ),
        2.0
    );
    assert_eq!(
        delta(
            "agentchat_http_requests_total",
            r#"route="/api/conversations/{id}/messages",method="POST",status="429""#
        ),
        1.0
    );
    assert!(delta("agentchat_tokens_total", r#"model="demo",type="output""#) > 0.0);
    assert_eq!(metric(&after, "agentchat_active_streams", ""), 0.0);
    assert_eq!(metric(&after, "agentchat_db_up", ""), 1.0);
    // The pool is reported shard by shard (a worker only draws on its own shard, so one can
    // run dry while the total looks half used); together they are the configured 8.
    let shard_max: Vec<f64> = after
        .lines()
        .filter(|l| l.starts_with("agentchat_db_pool_max_connections{"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse().unwrap())
        .collect();
    assert!(shard_max.len() >= 2, "one series per shard: {shard_max:?}");
    assert_eq!(shard_max.iter().sum::<f64>(), 8.0);
    for shard in 0..shard_max.len() {
        let label = format!(r#"shard="{shard}""#);
        assert_eq!(metric(&after, "agentchat_db_pool_waiting", &label), 0.0);
        for state in ["in_use", "idle"] {
            let labels = format!(r#"shard="{shard}",state="{state}""#);
            assert!(
                after.contains(&format!("agentchat_db_pool_connections{{{labels}}}")),
                "no {labels} series"
            );
        }
    }
    assert!(after.contains("agentchat_model_time_to_first_token_seconds_bucket"));
    assert!(
        !after.contains(&member.user_id.to_string()),
        "a user id in a label"
    );
    // promtool (Debian's prometheus package) accepts the exposition when it is installed.
    if let Ok(mut child) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(after.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn metrics_can_require_a_bearer_token() {
    let app = TestApp::builder()
        .settings(|s| s.telemetry.metrics_token = Some("scrape-secret".to_owned().into()))
        .start()
        .await;
    let r = app.client.get(app.url("/metrics")).send().await.unwrap();
    expect_error(r, 401, "unauthenticated").await;
    let r = app
        .client
        .get(app.url("/metrics"))
        .bearer_auth("scrape-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
