//! Hostile input: over 50 SSRF bypass URLs for `http_get` (and a custom tool's redirect)
//! against a loopback canary that counts every connection: it must see none.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::tiny_server::{Behaviour, TinyServer};
use serde_json::json;

/// Ways to write "the canary on loopback" (and other private places) in a URL.
fn bypasses(port: u16, redirector: &str) -> Vec<String> {
    let hosts = [
        "127.0.0.1",
        "127.1",
        "127.0.1",
        "2130706433",
        "0x7f000001",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "017700000001",
        "0177.0.0.01",
        "127.000.000.001",
        "0",
        "0.0.0.0",
        "0x0",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "[::127.0.0.1]",
        "[::]",
        "localhost",
        "LOCALHOST",
        "localhost.",
        "sub.localhost",
        "ip6-localhost",
        "127.0.0.1.",
        "[::1%25lo]",
        "127.255.255.254",
        "%31%32%37%2e%30%2e%30%2e%31",
        "127。0。0。1",
        "①②⑦.⓪.⓪.①",
    ];
    let mut out: Vec<String> = hosts
        .iter()
        .map(|h| format!("http://{h}:{port}/canary"))
        .collect();
    out.extend([
        format!("http://user@127.0.0.1:{port}/"),
        format!("http://user:pass@127.0.0.1:{port}/"),
        format!("http://example.com@127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{port}#@example.com/"),
        format!("http://127.0.0.1:{port}\\@example.com/"),
        format!("https://127.0.0.1:{port}/"),
        format!("HTTP://127.0.0.1:{port}/"),
        format!("http:/127.0.0.1:{port}/"),
        format!("http:\\\\127.0.0.1:{port}/"),
        format!("//127.0.0.1:{port}/"),
        format!("127.0.0.1:{port}"),
        format!("ftp://127.0.0.1:{port}/"),
        format!("gopher://127.0.0.1:{port}/_GET%20/"),
        "file:///proc/self/environ".to_owned(),
        format!("dict://127.0.0.1:{port}/"),
        format!("ws://127.0.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://[fd00:ec2::254]/latest/meta-data/".into(),
        "http://metadata.google.internal/computeMetadata/v1/".into(),
        "http://10.0.0.1/".into(),
        "http://172.16.0.1/".into(),
        "http://192.168.0.1/".into(),
        "http://100.64.0.1/".into(),
        "http://[fc00::1]/".into(),
        "http://[fe80::1]/".into(),
        "http://224.0.0.1/".into(),
        "http://255.255.255.255/".into(),
        // An allowed host that redirects to the canary: every hop is checked.
        format!("{redirector}/to-canary"),
    ]);
    out
}

#[tokio::test]
async fn ssrf_bypass_urls_never_reach_the_loopback_canary() {
    let fake = FakeUpstream::start().await;
    let canary = TinyServer::start(Behaviour::Body("text/plain", "CANARY-SSRF".into())).await;
    let redirector = TinyServer::start(Behaviour::Redirect(canary.url("/canary"))).await;
    // Only the redirector is exempt from the private-address block.
    let (app, [admin]) =
        crate::tools::app_with(&fake, vec![redirector.addr.to_string()], 16 * 1024)
            .start_as(["boss"])
            .await;
    fake.set_default(Some(Reply::text("noted").scripted()));
    let urls = bypasses(canary.addr.port(), &redirector.url(""));
    assert!(urls.len() >= 50, "{}", urls.len());
    let mut answered = 0;
    for batch in urls.chunks(16) {
        let calls: Vec<(String, String, String)> = batch
            .iter()
            .enumerate()
            .map(|(i, u)| {
                (
                    format!("c{i}"),
                    "http_get".to_owned(),
                    json!({"url": u}).to_string(),
                )
            })
            .collect();
        fake.push(Reply::ToolCalls { calls, usage: None });
        let conv = app.new_conversation(&admin.access).await;
        let events = app.chat(&admin.access, &conv, "fetch these").await;
        for e in events.iter().filter(|e| e.event == "tool_result") {
            answered += 1;
            assert_eq!(e.data["success"], false, "fetched: {}", e.data);
            assert!(!e.data.to_string().contains("CANARY"), "{}", e.data);
        }
    }
    assert_eq!(answered, urls.len());
    assert_eq!(canary.hits(), 0, "the canary was reached");
    assert_eq!(redirector.hits(), 1, "the redirect test did run");

    // A custom tool pointed at the redirector is held to the same guard on every hop.
    let r = app
        .client
        .post(app.url("/api/admin/tools/custom"))
        .bearer_auth(&admin.access)
        .json(
            &json!({"name": "hop", "description": "x", "parameters": {"type": "object"},
                      "method": "GET", "url_template": redirector.url("/hop")}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let tools = ["calculator", "current_time", "http_get", "hop"];
    assert_eq!(
        app.put_role(&admin.access, "admin", json!({"tools": tools}))
            .await
            .status(),
        200
    );
    let r = crate::tools::call_tool(&app, &fake, &admin.access, "hop", json!({})).await;
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(
        canary.hits(),
        0,
        "the canary was reached through a custom tool"
    );
}
