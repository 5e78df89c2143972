//! MCP servers added, changed or deleted through the admin API on one process reach every
//! process on the database within moments (no restart).

use std::time::Duration;

use agentchat_tests::*;
use serde_json::{json, Value};

/// The admin-API server `name` as process `app` lists it.
async fn listed(app: &TestApp, token: &str, name: &str) -> Option<Value> {
    let list: Value = app
        .get_as(token, "/api/admin/mcp-servers")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
}

/// Polls `app` until `want` holds for the server `name`, for at most five seconds.
async fn eventually(app: &TestApp, token: &str, name: &str, want: impl Fn(Option<&Value>) -> bool) {
    for _ in 0..100 {
        if want(listed(app, token, name).await.as_ref()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the other process never caught up: {:?}",
        listed(app, token, name).await
    );
}

#[tokio::test]
async fn admin_api_changes_reach_the_other_processes() {
    let app = TestApp::builder().start().await;
    let other = TestApp::builder().database(&app.database_url).start().await;
    let admin = app.signed_up("boss").await;
    // Nothing listens there: the server is listed (with its error), never reached.
    let url = "http://127.0.0.1:9/mcp";

    let r = app
        .post_as(&admin.access, "/api/admin/mcp-servers")
        .json(&json!({"name": "shared", "url": url, "timeout_ms": 2000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    eventually(&other, &admin.access, "shared", |s| {
        s.is_some_and(|s| s["source"] == "api" && s["timeout_ms"] == 2000)
    })
    .await;

    let r = app
        .client
        .put(app.url("/api/admin/mcp-servers/shared"))
        .bearer_auth(&admin.access)
        .json(&json!({"url": url, "timeout_ms": 3000, "enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    eventually(&other, &admin.access, "shared", |s| {
        s.is_some_and(|s| s["timeout_ms"] == 3000 && s["enabled"] == false)
    })
    .await;

    // A change made on the other process comes back the same way.
    let r = other
        .delete_as(&admin.access, "/api/admin/mcp-servers/shared")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    eventually(&app, &admin.access, "shared", |s| s.is_none()).await;
}
