//! Finding 5 of the third review (issue 29): an MCP server's tool list is read and offered
//! within `[tools.mcp]` limits. A hostile listing (pages without end, thousands of tools,
//! huge descriptions or schemas) leaves the server `degraded` with the reasons in the admin
//! view and `/metrics`, and models are offered a bounded set, never an unbounded one.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::mcp_peers::Peers;
use agentchat_tests::TestApp;
use serde_json::{json, Value};

use crate::mcp::offered;

fn notes(server: &Value) -> Vec<String> {
    server["status"]["notes"]
        .as_array()
        .map(|n| n.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

async fn metrics(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A server whose every page names a next one: the listing stops at `max_list_pages`, keeps
/// `max_tools_per_server` tools, and says so. Before the limits the listing never ended
/// (memory grew with every page) and the server ended in `error` after its timeout.
#[tokio::test]
async fn an_endless_tool_list_is_cut_and_the_server_shown_degraded() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .start_as(["boss", "worker"])
        .await;
    let (_peer, url) = peers
        .own_http(&["--endless".into(), "--bulk-per-page".into(), "50".into()])
        .await;
    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "bulk", "url": url, "timeout_ms": 20000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let server = app
        .wait_mcp(&admin.access, "bulk", "degraded", Some("bulk__echo"))
        .await;
    assert_eq!(server["tools"].as_array().unwrap().len(), 128, "{server}");
    let notes = notes(&server);
    assert!(
        notes.iter().any(|n| n.contains("more than 16 pages")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("max_tools_per_server (128)")),
        "{notes:?}"
    );

    let m = metrics(&app).await;
    assert!(
        m.contains(r#"agentchat_mcp_server_state{server="bulk",state="degraded"} 1"#),
        "{m}"
    );
    assert!(
        m.contains(r#"agentchat_mcp_server_state{server="bulk",state="connected"} 0"#),
        "{m}"
    );
    assert!(
        m.contains(r#"agentchat_mcp_tools_offered{server="bulk"} 128"#),
        "{m}"
    );

    // A turn is offered the kept tools, no more.
    assert_eq!(
        app.put_role(&admin.access, "member", json!({"tools": ["bulk__*"]}))
            .await
            .status(),
        200
    );
    fake.push(Reply::text("hello"));
    let conv = app.new_conversation(&member.access).await;
    app.chat(&member.access, &conv, "hi").await;
    let names = offered(&fake);
    assert_eq!(
        names.iter().filter(|n| n.starts_with("bulk__")).count(),
        128,
        "{names:?}"
    );
}

/// Descriptions are cut, tools with an oversized schema left out, and all servers together
/// offer at most `max_offered_bytes` of definitions: the rest is not offered, and the server
/// that did not fit says how many of its tools are out.
#[tokio::test]
async fn sizes_and_the_offered_total_are_bounded() {
    let Some(peers) = Peers::get() else { return };
    let fake = FakeUpstream::start().await;
    let bulk = |name: &str, args: &[&str]| {
        let mut base = vec!["--bulk-pages", "1", "--bulk-per-page", "40"];
        base.extend_from_slice(args);
        peers.own_stdio(name, &base)
    };
    let (app, [admin, member]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| {
            s.tools.mcp.max_description_bytes = 256;
            s.tools.mcp.max_schema_bytes = 1024;
            s.tools.mcp.max_offered_bytes = 16 * 1024;
        })
        .mcp_peer(bulk("aaa", &["--bulk-description-bytes", "300"]))
        .mcp_peer(bulk("bbb", &["--bulk-schema-bytes", "2000"]))
        .mcp_peer(bulk("ccc", &[]))
        .start_as(["boss", "worker"])
        .await;

    let wordy = app
        .wait_mcp(&admin.access, "aaa", "degraded", Some("aaa__bulk_0_39"))
        .await;
    let longest = wordy["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap().len())
        .max()
        .unwrap();
    assert_eq!(longest, 256, "{wordy}");
    assert!(
        notes(&wordy)
            .iter()
            .any(|n| n.contains("40 tool descriptions were cut to 256 bytes")),
        "{wordy}"
    );

    let wide = app
        .wait_mcp(&admin.access, "bbb", "degraded", Some("bbb__echo"))
        .await;
    assert!(
        !wide["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"].as_str().unwrap().starts_with("bbb__bulk")),
        "{wide}"
    );
    assert!(
        notes(&wide).iter().any(|n| n.contains(
            "40 tools with a parameter schema over 1024 bytes (tools.mcp.max_schema_bytes) were left out: bulk_0_0"
        )),
        "{wide}"
    );

    // aaa (~45 tools of ~350 bytes) fills most of the 16 KiB; ccc, listed last, does not fit.
    let last = app
        .wait_mcp(&admin.access, "ccc", "degraded", Some("ccc__echo"))
        .await;
    assert!(
        notes(&last)
            .iter()
            .any(|n| n.contains("are not offered: all MCP tools together would pass 16384 bytes")),
        "{last}"
    );

    assert_eq!(
        app.put_role(
            &admin.access,
            "member",
            json!({"tools": ["aaa__*", "bbb__*", "ccc__*"]})
        )
        .await
        .status(),
        200
    );
    fake.push(Reply::text("hello"));
    let conv = app.new_conversation(&member.access).await;
    app.chat(&member.access, &conv, "hi").await;
    let request = fake.requests().last().unwrap().clone();
    let mcp_bytes: usize = request["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["function"]["name"].as_str().unwrap().contains("__"))
        .map(|t| {
            t["function"]["name"].as_str().unwrap().len()
                + t["function"]["description"].as_str().unwrap_or("").len()
                + t["function"]["parameters"].to_string().len()
        })
        .sum();
    assert!(mcp_bytes <= 16 * 1024, "{mcp_bytes} bytes offered");
    assert!(mcp_bytes > 8 * 1024, "{mcp_bytes} bytes offered");
}
