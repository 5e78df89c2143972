//! Tools through the running server, with a fake model that insists on forbidden things:
//! allowlists enforced at execution, workspace jail, SSRF guard (a canary proves nothing was
//! hit), truncation, timeouts, and the audit row each call leaves.

use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::tiny_server::{Behaviour, TinyServer};
use agentchat_tests::*;
use serde_json::{json, Value};

/// A server on the fake model whose `http_request` tool may reach `allow_private` (host:port
/// on private addresses), gives up after 3 s, and whose tool results are cut at `output_cap`.
pub(crate) fn app_with(
    fake: &FakeUpstream,
    allow_private: Vec<String>,
    output_cap: usize,
) -> AppBuilder<'_> {
    TestApp::builder().openai(fake).settings(move |s| {
        s.llm.tool_output_cap_bytes = output_cap;
        s.tools.http.allow_private_host_ports = allow_private;
        s.tools.http.timeout = Duration::from_secs(3);
    })
}

/// Runs one turn in which the model calls `name(arguments)` once and then answers.
pub(crate) async fn call_tool(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    name: &str,
    args: Value,
) -> Value {
    fake.push(Reply::tool_call("t1", name, args.to_string()));
    fake.push(Reply::text("noted"));
    let conv = app.new_conversation(token).await;
    let events = app.chat(token, &conv, "do it").await;
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "stop",
        "the loop goes on after a tool error: {events:?}"
    );
    events
        .iter()
        .find(|e| e.event == "tool_result")
        .expect("a tool result")
        .data
        .clone()
}

pub(crate) async fn audit(app: &TestApp, admin: &str, query: &str) -> Vec<Value> {
    let r: Value = app
        .get_as(admin, &format!("/api/admin/audit?{query}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_tool_outside_the_allowlist_is_refused_audited_and_the_loop_goes_on() {
    let fake = FakeUpstream::start().await;
    let canary = TinyServer::start(Behaviour::Body("text/plain", "secret".into())).await;
    let (app, [admin, member]) = app_with(&fake, vec![canary.addr.to_string()], 16 * 1024)
        .start_as(["boss", "worker"])
        .await;
    // http_get is not in the member role; the model was not offered it and calls it anyway.
    let result = call_tool(
        &app,
        &fake,
        &member.access,
        "http_get",
        json!({"url": canary.url("/")}),
    )
    .await;
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("not_permitted"),
        "{result}"
    );
    assert_eq!(canary.hits(), 0);
    let offered: Vec<String> = fake.requests()[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!offered.contains(&"http_get".to_owned()), "{offered:?}");
    assert!(offered.contains(&"read_file".to_owned()));
    let rows = audit(&app, &admin.access, "user=worker&outcome=refused").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["tool"], "http_get");
    assert_eq!(rows[0]["arguments"]["url"], canary.url("/"));
    // Members cannot read the audit log.
    let r = app
        .get_as(&member.access, "/api/admin/audit")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
}

#[tokio::test]
async fn an_admin_change_to_the_allowlist_applies_to_the_next_model_call() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = app_with(&fake, vec![], 16 * 1024)
        .start_as(["boss", "worker"])
        .await;
    let ok = call_tool(
        &app,
        &fake,
        &member.access,
        "calculator",
        json!({"expression": "2+2"}),
    )
    .await;
    assert_eq!(ok["success"], true);
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["current_time"]}))
        .await;
    assert_eq!(r.status(), 200);
    let refused = call_tool(
        &app,
        &fake,
        &member.access,
        "calculator",
        json!({"expression": "2+2"}),
    )
    .await;
    assert_eq!(refused["success"], false);
    assert!(refused["error"].as_str().unwrap().contains("not_permitted"));
    let me: Value = app
        .get_as(&member.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["tools"], json!(["current_time"]));
}

#[tokio::test]
async fn new_roles_allow_nothing_and_unknown_tools_are_refused() {
    let (app, [admin]) = TestApp::builder().start_as(["boss"]).await;
    let r = app
        .put_role(&admin.access, "analyst", json!({"tools": []}))
        .await;
    assert_eq!(r.status(), 201);
    let r = app
        .put_role(&admin.access, "analyst", json!({"tools": ["rm_rf"]}))
        .await;
    expect_error(r, 422, "unknown_tool").await;
    let roles: Value = app
        .get_as(&admin.access, "/api/admin/roles")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "analyst", "member"]);
    let tools: Value = app
        .get_as(&admin.access, "/api/admin/tools")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = tools["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "calculator",
        "csv_stats",
        "current_time",
        "delete_file",
        "http_get",
        "list_files",
        "read_file",
        "write_file",
    ] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    assert!(tools["items"][0]["parameters"]["properties"].is_object());
}

#[tokio::test]
async fn the_workspace_jail_holds_against_a_hostile_model() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, s]) = app_with(&fake, vec![], 16 * 1024)
        .start_as(["boss", "prisoner"])
        .await;
    // Something planted inside the workspace that points outside it.
    let dir = app.workspace_dir.join(s.user_id.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
    for path in [
        "../../etc/passwd",
        "/etc/passwd",
        "passwd",
        "etc/passwd",
        "a/../../b",
        "x\u{0}y",
    ] {
        let r = call_tool(&app, &fake, &s.access, "read_file", json!({"path": path})).await;
        assert_eq!(r["success"], false, "{path}: {r}");
        assert!(
            !r.to_string().contains("root:"),
            "{path} leaked /etc/passwd"
        );
    }
    let w = call_tool(
        &app,
        &fake,
        &s.access,
        "write_file",
        json!({"path": "../escape.txt", "content": "x"}),
    )
    .await;
    assert_eq!(w["success"], false);
    assert!(!app.workspace_dir.join("escape.txt").exists());
    let rows = audit(
        &app,
        &admin.access,
        "user=prisoner&tool=read_file&outcome=error",
    )
    .await;
    assert_eq!(rows.len(), 6);
    // A normal round trip works, and the file is visible through the files API.
    let w = call_tool(
        &app,
        &fake,
        &s.access,
        "write_file",
        json!({"path": "notes/a.txt", "content": "hello"}),
    )
    .await;
    assert_eq!(w["success"], true, "{w}");
    let files: Value = app
        .get_as(&s.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        files["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "notes/a.txt"),
        "{files}"
    );
}

#[tokio::test]
async fn http_get_cannot_reach_private_addresses_even_through_redirects() {
    let fake = FakeUpstream::start().await;
    let canary = TinyServer::start(Behaviour::Body("text/plain", "canary".into())).await;
    let redirector = TinyServer::start(Behaviour::Redirect(canary.url("/"))).await;
    let page = TinyServer::start(Behaviour::Body(
        "text/html",
        "<html><head><script>x()</script></head><body><h1>Hello</h1><p>world</p></body></html>"
            .into(),
    ))
    .await;
    // Only the redirector and the page are let through the private-address rule.
    let (app, [admin]) = app_with(
        &fake,
        vec![redirector.addr.to_string(), page.addr.to_string()],
        16 * 1024,
    )
    .start_as(["boss"])
    .await;
    let port = canary.addr.port();
    for url in [
        canary.url("/"),
        format!("http://localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://2130706433:{port}/"),
        "http://10.0.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        redirector.url("/"),
    ] {
        let r = call_tool(&app, &fake, &admin.access, "http_get", json!({"url": url})).await;
        assert_eq!(r["success"], false, "{url}: {r}");
    }
    assert_eq!(canary.hits(), 0, "the canary was reached");
    assert_eq!(
        redirector.hits(),
        1,
        "the allowed redirector was asked once"
    );
    let ok = call_tool(
        &app,
        &fake,
        &admin.access,
        "http_get",
        json!({"url": page.url("/")}),
    )
    .await;
    assert_eq!(ok["success"], true, "{ok}");
    let text = ok["data"]["text"].as_str().unwrap();
    assert!(
        text.contains("Hello") && text.contains("world") && !text.contains("x()"),
        "{text}"
    );
    let refused = audit(&app, &admin.access, "tool=http_get&outcome=refused").await;
    assert!(refused.len() >= 5, "{refused:?}");
    let usage: Value = app
        .get_as(&admin.access, "/api/admin/usage?period=day")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let http = usage["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "http_get")
        .unwrap()
        .clone();
    assert_eq!(http["calls"], 8);
    assert_eq!(http["failures"], 7);
}

#[tokio::test]
async fn oversized_tool_output_is_truncated_with_a_note() {
    let fake = FakeUpstream::start().await;
    let (app, [s]) = app_with(&fake, vec![], 512).start_as(["reader"]).await;
    let big = "line of text\n".repeat(2000);
    let r = app
        .client
        .put(app.url("/api/files/big.txt"))
        .bearer_auth(&s.access)
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let result = call_tool(
        &app,
        &fake,
        &s.access,
        "read_file",
        json!({"path": "big.txt"}),
    )
    .await;
    assert_eq!(result["success"], true);
    let shown = result["data"].to_string();
    assert!(shown.contains("truncated"), "{shown}");
    assert!(
        shown.len() < 2048,
        "{} bytes reached the model",
        shown.len()
    );
    // And what went back to the model is the truncated envelope.
    let second = &fake.requests()[1]["body"]["messages"];
    let tool_msg = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(tool_msg["content"].as_str().unwrap().len() < 2048);
}

#[tokio::test]
async fn admin_defined_http_tools_work_keep_secrets_and_time_out() {
    let fake = FakeUpstream::start().await;
    let api = TinyServer::start(Behaviour::Body(
        "application/json",
        r#"{"temp": 21}"#.into(),
    ))
    .await;
    let slow = TinyServer::start(Behaviour::Slow(Duration::from_secs(5))).await;
    let (app, [admin]) = app_with(
        &fake,
        vec![api.addr.to_string(), slow.addr.to_string()],
        16 * 1024,
    )
    .start_as(["boss"])
    .await;
    let define = |name: &str, url: String, timeout_ms: i64| {
        app.client
            .post(app.url("/api/admin/tools/custom"))
            .bearer_auth(&admin.access)
            .json(&json!({
                "name": name,
                "description": "Weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "method": "GET",
                "url_template": url,
                "headers": {"X-Api-Key": "super-secret-key"},
                "timeout_ms": timeout_ms,
            }))
            .send()
    };
    let r = define("weather", format!("{}/weather/{{city}}", api.url("")), 2000)
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = define("slowpoke", slow.url("/"), 300).await.unwrap();
    assert_eq!(r.status(), 201);
    // A placeholder that names no parameter would be sent literally: refused, naming it.
    let r = define("typo", format!("{}/weather/{{town}}", api.url("")), 2000)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unknown_placeholder", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("{town}"),
        "{body}"
    );
    let listed = app
        .get_as(&admin.access, "/api/admin/tools/custom")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!listed.contains("super-secret-key"), "{listed}");
    assert!(listed.contains("X-Api-Key"));
    // Deny by default: the admin role must list them first.
    let mut tools: Vec<String> = ["calculator", "current_time", "http_get"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    tools.extend(["weather".to_owned(), "slowpoke".to_owned()]);
    let r = app
        .put_role(&admin.access, "admin", json!({"tools": tools}))
        .await;
    assert_eq!(r.status(), 200);
    let ok = call_tool(
        &app,
        &fake,
        &admin.access,
        "weather",
        json!({"city": "Paris / Nord"}),
    )
    .await;
    assert_eq!(ok["success"], true, "{ok}");
    assert_eq!(ok["data"]["body"]["temp"], 21);
    let req = &api.requests()[0];
    assert!(req.starts_with("GET /weather/Paris%20%2F%20Nord"), "{req}");
    assert!(req
        .to_ascii_lowercase()
        .contains("x-api-key: super-secret-key"));
    let late = call_tool(&app, &fake, &admin.access, "slowpoke", json!({"city": "x"})).await;
    assert_eq!(late["success"], false);
    let rows = audit(&app, &admin.access, "tool=slowpoke").await;
    assert_eq!(rows[0]["outcome"], "timeout", "{rows:?}");
    // A custom tool cannot shadow a built-in, and bad definitions are refused.
    let r = define("calculator", api.url("/"), 1000).await.unwrap();
    expect_error(r, 409, "tool_exists").await;
    let r = app
        .client
        .post(app.url("/api/admin/tools/custom"))
        .bearer_auth(&admin.access)
        .json(&json!({"name": "bad", "description": "x", "parameters": {"type": "string"}, "method": "GET", "url_template": "ftp://x"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_parameters").await;
    let r = app
        .delete_as(&admin.access, "/api/admin/tools/custom/weather")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn the_files_api_is_per_user_and_jailed() {
    let (app, [a, b]) = TestApp::builder().start_as(["alpha", "bravo"]).await;
    let r = app
        .client
        .put(app.url("/api/files/data/sales.csv"))
        .bearer_auth(&a.access)
        .body("region,amount\nnorth,10\nsouth,20\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let got = app
        .get_as(&a.access, "/api/files/data/sales.csv")
        .send()
        .await
        .unwrap();
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"sales.csv\""
    );
    assert!(got.text().await.unwrap().starts_with("region,amount"));
    expect_error(
        app.get_as(&b.access, "/api/files/data/sales.csv")
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    let listed: Value = app
        .get_as(&b.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"], json!([]));
    for bad in [
        "/api/files/..%2F..%2Fetc%2Fpasswd",
        "/api/files/%2Fetc%2Fpasswd",
    ] {
        let r = app.get_as(&a.access, bad).send().await.unwrap();
        assert!(
            r.status() == 400 || r.status() == 404,
            "{bad}: {}",
            r.status()
        );
    }
    let r = app
        .delete_as(&a.access, "/api/files/data/sales.csv")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    expect_error(
        app.get_as(&a.access, "/api/files/data/sales.csv")
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn the_demo_model_analyses_an_uploaded_csv() {
    let fake = FakeUpstream::start().await;
    let (app, [s]) = app_with(&fake, vec![], 16 * 1024)
        .start_as(["analyst"])
        .await;
    app.client
        .put(app.url("/api/files/sales.csv"))
        .bearer_auth(&s.access)
        .body("region,amount\nnorth,10\nsouth,20\nnorth,5\n")
        .send()
        .await
        .unwrap();
    let r = call_tool(
        &app,
        &fake,
        &s.access,
        "csv_stats",
        json!({"path": "sales.csv", "operation": "sum", "column": "amount", "group_by": "region"}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert!(r["data"].to_string().contains("15"), "{r}");
}
