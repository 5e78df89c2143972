//! MCP tool servers against real peers from the registries: `mcp-server-time` (PyPI, stdio)
//! and `@modelcontextprotocol/server-everything` (npm, Streamable HTTP). Discovery, the
//! allowlist (deny by default, `{server}__*`), schema errors, audit rows, the admin API.

use agentchat::tools::mcp::McpServerConfig;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::*;
use serde_json::{json, Value};

/// One turn in which the model calls `name(args)` and then answers; the tool result.
pub async fn call(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    name: &str,
    args: Value,
) -> Value {
    fake.push(Reply::tool_call("c1", name, args.to_string()));
    fake.push(Reply::text("done"));
    let conv = app.new_conversation(token).await;
    let events = app.chat(token, &conv, "go").await;
    events
        .iter()
        .find(|e| e.event == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {events:?}"))
        .data
        .clone()
}

/// Names of the tools offered in the latest model request.
pub fn offered(fake: &FakeUpstream) -> Vec<String> {
    let requests = fake.requests();
    let last = requests.last().unwrap();
    last["body"]["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn mcp_server_time_over_stdio_is_discovered_governed_validated_and_audited() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .mcp_peer(peers.time("time"))
        .start_as(["boss", "worker"])
        .await;
    let s = app
        .wait_mcp(
            &admin.access,
            "time",
            "connected",
            Some("time__get_current_time"),
        )
        .await;
    assert_eq!(s["transport"], "stdio");
    assert_eq!(s["source"], "config");
    assert!(s["status"]["protocol_version"].is_string(), "{s}");

    // The admin tools list shows it as an MCP tool with its server and annotations.
    let tools: Value = app
        .get_as(&admin.access, "/api/admin/tools")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let t = tools["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "time__get_current_time")
        .expect("listed")
        .clone();
    assert_eq!(t["kind"], "mcp");
    assert_eq!(t["server"], "time");
    assert!(t["annotations"].is_object());
    assert_eq!(t["parameters"]["required"], json!(["timezone"]));

    // Deny by default: not offered, and refused when the model names it anyway.
    let r = call(
        &app,
        &fake,
        &member.access,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().contains("not_permitted"),
        "{r}"
    );
    assert!(!offered(&fake).contains(&"time__get_current_time".to_owned()));

    // A pattern for an unknown server is refused; `time__*` allows the whole server.
    let bad = app
        .put_role(&admin.access, "member", json!({"tools": ["nope__*"]}))
        .await;
    expect_error(bad, 422, "unknown_tool").await;
    let ok = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["calculator", "time__*"]}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    let me: Value = app
        .get_as(&member.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mine: Vec<&str> = me["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        mine.contains(&"time__get_current_time") && mine.contains(&"time__convert_time"),
        "{mine:?}"
    );
    assert!(!mine.contains(&"time__*"), "{mine:?}");

    let r = call(
        &app,
        &fake,
        &member.access,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert!(r["data"].to_string().contains("UTC"), "{r}");
    assert!(offered(&fake).contains(&"time__get_current_time".to_owned()));

    // Arguments are checked against the tool's input schema before the call.
    let r = call(
        &app,
        &fake,
        &member.access,
        "time__get_current_time",
        json!({}),
    )
    .await;
    assert_eq!(r["success"], false);
    assert_eq!(
        r["error"], "invalid arguments: timezone: is a required property",
        "{r}"
    );

    // Every call left an audit row.
    let rows: Value = app
        .get_as(
            &admin.access,
            "/api/admin/audit?tool=time__get_current_time",
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let outcomes: Vec<&str> = rows["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes.len(), 3, "{rows}");
    assert!(
        outcomes.contains(&"ok") && outcomes.contains(&"refused"),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn server_everything_over_streamable_http_through_the_admin_api() {
    let Some(peers) = Peers::get() else { return };
    let (_everything, url) = peers.everything().await;
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .start_as(["boss", "worker"])
        .await;

    // stdio servers cannot be added through the API.
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "sh", "url": url, "command": "sh"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "Bad_Name", "url": url}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_name").await;

    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "everything", "url": url, "headers": {"X-Api-Key": "s3cret-value"}, "timeout_ms": 10000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let text = r.text().await.unwrap();
    assert!(
        !text.contains("s3cret-value"),
        "header values are write-only: {text}"
    );
    let created: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(created["transport"], "http");
    assert_eq!(created["source"], "api");
    assert_eq!(created["headers"], json!(["X-Api-Key"]));
    let s = app
        .wait_mcp(
            &admin.access,
            "everything",
            "connected",
            Some("everything__echo"),
        )
        .await;
    let echo = s["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything__echo")
        .unwrap();
    assert_eq!(echo["remote_name"], "echo");

    let ok = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["everything__echo"]}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    let r = call(
        &app,
        &fake,
        &member.access,
        "everything__echo",
        json!({"message": "hi there"}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert!(r["data"].to_string().contains("hi there"), "{r}");
    // Only the listed tool is allowed, not its siblings.
    let r = call(
        &app,
        &fake,
        &member.access,
        "everything__get-sum",
        json!({"a": 1, "b": 2}),
    )
    .await;
    assert!(
        r["error"].as_str().unwrap().contains("not_permitted"),
        "{r}"
    );

    // Disable: state disabled, tools gone from what is offered and listed.
    let r = app
        .client
        .put(app.url("/api/admin/mcp-servers/everything"))
        .bearer_auth(&admin.access)
        .json(&json!({"url": url, "enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s = app.mcp_server(&admin.access, "everything").await;
    assert_eq!(s["status"]["state"], "disabled");
    assert_eq!(
        s["headers"],
        json!(["X-Api-Key"]),
        "headers kept when not resent"
    );
    let r = call(
        &app,
        &fake,
        &member.access,
        "everything__echo",
        json!({"message": "x"}),
    )
    .await;
    assert!(r["error"].as_str().unwrap().contains("unknown tool"), "{r}");

    // Re-enable and refresh.
    let r = app
        .client
        .put(app.url("/api/admin/mcp-servers/everything"))
        .bearer_auth(&admin.access)
        .json(&json!({"url": url, "enabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers/everything/refresh")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    app.wait_mcp(
        &admin.access,
        "everything",
        "connected",
        Some("everything__echo"),
    )
    .await;

    // Members cannot see or change any of it.
    let r = app
        .get_as(&member.access, "/api/admin/mcp-servers")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;

    let r = app
        .delete_as(&admin.access, "/api/admin/mcp-servers/everything")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = app
        .get_as(&admin.access, "/api/admin/mcp-servers/everything")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn a_server_that_is_down_offers_nothing_and_says_why() {
    let fake = FakeUpstream::start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut down = McpServerConfig::http("down", &format!("http://127.0.0.1:{port}/mcp"));
    down.timeout_ms = 2000;
    let (app, [admin]) = TestApp::builder()
        .openai(&fake)
        .mcp_peer(down)
        .start_as(["boss"])
        .await;
    let s = app.wait_mcp(&admin.access, "down", "error", None).await;
    assert!(s["status"]["error"].as_str().unwrap().len() > 3, "{s}");
    assert_eq!(s["tools"], json!([]));
    let ok = app
        .put_role(&admin.access, "admin", json!({"tools": ["down__*"]}))
        .await;
    assert_eq!(ok.status(), 200);
    let started = std::time::Instant::now();
    let r = call(&app, &fake, &admin.access, "down__anything", json!({})).await;
    assert_eq!(r["success"], false);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(offered(&fake).iter().all(|t| !t.starts_with("down__")));
    // The JWKS is public.
    let jwks: Value = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["kty"], "OKP");
    assert_eq!(jwks["keys"][0]["alg"], "EdDSA");
}
