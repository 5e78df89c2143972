//! What a Streamable HTTP MCP call costs through AgentChat compared with calling the same
//! server directly over a persistent rmcp session, measured side by side in one run against
//! server-everything (its `echo` tool). Through AgentChat: a turn whose model calls
//! `everything__echo` minus the same turn calling the built-in `calculator` is the MCP call;
//! subtracting the direct call leaves what the server adds. Printed; bounded loosely here
//! (debug build, shared machine).

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::*;
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::json;

const ROUNDS: usize = 40;

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn turn(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    conv: &str,
    name: &str,
    args: serde_json::Value,
) -> Duration {
    fake.push(Reply::tool_call("c1", name, args.to_string()));
    fake.push(Reply::text("ok"));
    let started = Instant::now();
    let events = app.chat(token, conv, "go").await;
    let took = started.elapsed();
    let result = events
        .iter()
        .find(|e| e.event == "tool_result")
        .expect("a tool result");
    assert_eq!(result.data["success"], true, "{:?}", result.data);
    took
}

#[tokio::test]
async fn an_mcp_call_through_the_server_costs_little_more_than_a_direct_session() {
    let Some(peers) = Peers::get() else { return };
    let (_everything, url) = peers.everything().await;
    let mut everything = agentchat::tools::mcp::McpServerConfig::http("everything", &url);
    everything.timeout_ms = 10_000;
    let fake = FakeUpstream::start().await;
    let (app, [admin]) = TestApp::builder()
        .openai(&fake)
        .mcp_peer(everything)
        .start_as(["boss"])
        .await;
    app.wait_mcp(
        &admin.access,
        "everything",
        "connected",
        Some("everything__echo"),
    )
    .await;
    let ok = app
        .put_role(
            &admin.access,
            "admin",
            json!({"tools": ["calculator", "everything__echo"]}),
        )
        .await;
    assert_eq!(ok.status(), 200);

    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
    let direct = ().serve(transport).await.expect("direct session");
    let conv = app.new_conversation(&admin.access).await;

    let (mut d, mut through, mut builtin) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let args = json!({"message": format!("ping {i}")});
        let started = Instant::now();
        let r = direct
            .call_tool(
                CallToolRequestParams::new("echo")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        d.push(started.elapsed());
        assert_ne!(r.is_error, Some(true));
        through.push(turn(&app, &fake, &admin.access, &conv, "everything__echo", args).await);
        builtin.push(
            turn(
                &app,
                &fake,
                &admin.access,
                &conv,
                "calculator",
                json!({"expression": "1+1"}),
            )
            .await,
        );
    }
    let (d, through, builtin) = (p50(d), p50(through), p50(builtin));
    let via_server = through.saturating_sub(builtin);
    let added = via_server.saturating_sub(d);
    println!(
        "MCP echo over Streamable HTTP, p50 of {ROUNDS}: direct session {d:?}; turn with the MCP call {through:?}, \
         with a built-in call {builtin:?}; the MCP call through the server {via_server:?}; added {added:?}"
    );
    // Debug build, run beside the whole suite on a shared machine: 8 ms alone, 25 ms under the
    // full suite were seen. The bound only catches gross regressions (a handshake per call).
    assert!(
        added < Duration::from_millis(100),
        "the server adds {added:?} per MCP call"
    );
}
