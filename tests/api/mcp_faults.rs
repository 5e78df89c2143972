//! MCP servers that misbehave, and the forwarded identity, against the suite's own server
//! (`tests/mcp/agentchat_test_server.py`, the official `mcp` Python SDK).

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::TestApp;
use serde_json::{json, Value};

use crate::mcp::call;

#[tokio::test]
async fn crash_mid_call_hang_and_a_changing_tool_list() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let mut own = peers.own_stdio("own", &[]);
    own.timeout_ms = 3000;
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .mcp_peer(own)
        .start_as(["boss", "worker"])
        .await;
    app.wait_mcp(&admin.access, "own", "connected", Some("own__echo"))
        .await;
    let ok = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["own__*"], "approvals": {"own__*": "none"}}),
        )
        .await;
    assert_eq!(ok.status(), 200);

    // notifications/tools/list_changed: the new tool is picked up without a refresh.
    let r = call(
        &app,
        &fake,
        &member.access,
        "own__add_tool",
        json!({"name": "fresh"}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    app.wait_mcp(&admin.access, "own", "connected", Some("own__fresh"))
        .await;
    let r = call(&app, &fake, &member.access, "own__fresh", json!({})).await;
    assert_eq!(r["success"], true, "{r}");

    // A hang ends in a timeout error within the server's timeout.
    let started = Instant::now();
    let r = call(&app, &fake, &member.access, "own__hang", json!({})).await;
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("timed out"), "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A crash mid-call is a tool error at once, and the server is restarted.
    let started = Instant::now();
    let r = call(&app, &fake, &member.access, "own__crash", json!({})).await;
    assert_eq!(r["success"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("own"), "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    app.wait_mcp(&admin.access, "own", "connected", Some("own__echo"))
        .await;
    let r = call(
        &app,
        &fake,
        &member.access,
        "own__echo",
        json!({"text": "back"}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert!(r["data"].to_string().contains("echo: back"), "{r}");
    // A schema error never reaches the server.
    let r = call(&app, &fake, &member.access, "own__echo", json!({"text": 5})).await;
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid arguments: text"),
        "{r}"
    );
}

/// The claims the whoami tool returned (structured content, possibly wrapped, or JSON text).
fn claims(result: &Value) -> Value {
    let data = &result["data"];
    if let Some(text) = data.as_str() {
        return serde_json::from_str(text).unwrap_or(Value::Null);
    }
    let s = &data["structured"];
    s.get("result").cloned().unwrap_or_else(|| s.clone())
}

#[tokio::test]
async fn forwarded_identity_is_a_short_lived_jwt_the_server_verifies_with_our_jwks() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .start_as(["boss", "worker"])
        .await;
    let jwks = app.url("/.well-known/jwks.json");
    let (_ident, url) = peers
        .own_http(&[
            "--jwks-url".into(),
            jwks.clone(),
            "--audience".into(),
            "ident".into(),
        ])
        .await;
    let (_plain, plain_url) = peers
        .own_http(&[
            "--jwks-url".into(),
            jwks,
            "--audience".into(),
            "plain".into(),
        ])
        .await;
    for (name, url, forward) in [("ident", &url, true), ("plain", &plain_url, false)] {
        let r = app
            .post_as(&admin.access, "/api/admin/mcp-servers")
            .json(&json!({"name": name, "url": url, "forward_identity": forward, "timeout_ms": 10000}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        app.wait_mcp(
            &admin.access,
            name,
            "connected",
            Some(&format!("{name}__whoami")),
        )
        .await;
    }
    let ok = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["ident__*", "plain__*"],
                   "approvals": {"ident__*": "none", "plain__*": "none"}}),
        )
        .await;
    assert_eq!(ok.status(), 200);

    let r = call(&app, &fake, &member.access, "ident__whoami", json!({})).await;
    assert_eq!(r["success"], true, "{r}");
    let c = claims(&r);
    assert!(c.is_object(), "{r}");
    assert_eq!(c["sub"], member.user_id.to_string(), "{c}");
    assert_eq!(c["preferred_username"], "worker");
    assert_eq!(c["role"], "member");
    assert_eq!(c["aud"], "ident");
    let ttl = c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap();
    assert!(ttl > 0 && ttl <= 60, "{c}");

    // Without forward_identity nothing is sent, and the server refuses.
    let r = call(&app, &fake, &member.access, "plain__whoami", json!({})).await;
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("no identity token"),
        "{r}"
    );
}

#[tokio::test]
async fn an_mcp_call_is_an_extension_span_whose_trace_context_reaches_the_server() {
    let Some(peers) = Peers::get() else { return };
    let exporter = crate::observability::exporter();
    let fake = FakeUpstream::start().await;
    let (app, [admin]) = TestApp::builder().openai(&fake).start_as(["boss"]).await;
    let (_ident, url) = peers
        .own_http(&[
            "--jwks-url".into(),
            app.url("/.well-known/jwks.json"),
            "--audience".into(),
            "traced".into(),
        ])
        .await;
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "traced", "url": url, "forward_identity": true, "timeout_ms": 10000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    app.wait_mcp(&admin.access, "traced", "connected", Some("traced__whoami"))
        .await;
    let ok = app
        .put_role(
            &admin.access,
            "admin",
            json!({"tools": ["traced__*"], "approvals": {"traced__*": "none"}}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    fake.push(agentchat_tests::fake_upstream::Reply::tool_call(
        "c1",
        "traced__whoami",
        "{}",
    ));
    fake.push(agentchat_tests::fake_upstream::Reply::text("done"));
    let conv = app.new_conversation(&admin.access).await;
    let parent_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let body = app
        .post_as(
            &admin.access,
            &format!("/api/conversations/{conv}/messages"),
        )
        .header(
            "traceparent",
            format!("00-{parent_trace}-00f067aa0ba902b7-01"),
        )
        .json(&json!({"content": "who am I"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = agentchat_tests::parse_sse(&body);
    let result = &events
        .iter()
        .find(|e| e.event == "tool_result")
        .unwrap()
        .data;
    assert_eq!(result["success"], true, "{result}");
    let c = claims(result);
    let sent = c["traceparent_header"].as_str().unwrap_or_default();
    assert!(sent.starts_with(&format!("00-{parent_trace}-")), "{c}");
    let trace_id = opentelemetry::trace::TraceId::from_hex(parent_trace).unwrap();
    let mut span = None;
    for _ in 0..50 {
        span = exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .find(|s| {
                s.span_context.trace_id() == trace_id && s.name == "execute_tool traced__whoami"
            });
        if span.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let span = span.expect("an execute_tool span");
    assert_eq!(
        crate::observability::attr(&span, "gen_ai.tool.type").as_deref(),
        Some("extension")
    );
    // The header names this very span as the parent.
    assert!(
        sent.contains(&span.span_context.span_id().to_string()),
        "{sent}"
    );
}
