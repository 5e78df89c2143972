//! A role's code interpreter limits (issue 47): an admin tightens `[sandbox]` for a role,
//! never past it; the next run of the role's users gets the tighter limit; the change is in
//! the admin trail and only an admin may make it.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::code_interpreter::{granted, run};

#[derive(diesel::QueryableByName)]
struct Change {
    #[diesel(sql_type = diesel::sql_types::Text)]
    kind: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    target: String,
}

#[tokio::test]
async fn a_role_timeout_ends_a_long_run_and_cannot_pass_the_server_ceiling() {
    let fake = FakeUpstream::start().await;
    let ws =
        std::env::temp_dir().join(format!("agentchat-rl-ws-{}", uuid::Uuid::new_v4().simple()));
    let (app, [admin, member]) = granted(&fake, ws)
        .settings(|s| s.sandbox.timeout_secs = 30)
        .start_as(["boss", "ana"])
        .await;
    let path = "/api/admin/roles/member/sandbox";

    // Nothing set: every value is the server's.
    let r = app.get_as(&admin.access, path).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let got: Value = r.json().await.unwrap();
    assert_eq!(got["timeout_secs"], Value::Null, "{got}");

    // Above the server's ceiling: refused, naming the setting and its value.
    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(&admin.access)
        .json(&json!({"timeout_secs": 31}))
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 422, "above_server_sandbox_limit").await;
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("sandbox.timeout_secs") && msg.contains("30"),
        "{msg}"
    );
    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(&admin.access)
        .json(&json!({"max_files": 0}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_sandbox_limits").await;

    // A member may not set their own role's limits.
    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(&member.access)
        .json(&json!({"timeout_secs": 30}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(&admin.access)
        .json(&json!({"timeout_secs": 2, "max_files": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app.get_as(&admin.access, path).send().await.unwrap();
    let got: Value = r.json().await.unwrap();
    assert_eq!(got["timeout_secs"], 2, "{got}");
    assert_eq!(got["max_files"], 5, "{got}");
    assert_eq!(got["memory_mb"], Value::Null, "{got}");

    let mut db = app.db().await;
    let changes: Vec<Change> = diesel::sql_query(
        "SELECT kind, target FROM admin_changes WHERE kind = 'role.sandbox' ORDER BY id",
    )
    .load(&mut db)
    .await
    .unwrap();
    assert_eq!(changes.len(), 1, "only the accepted write is in the trail");
    assert_eq!(
        (changes[0].kind.as_str(), changes[0].target.as_str()),
        ("role.sandbox", "member")
    );

    // The call asks for 20 s; the role's 2 s wins.
    let started = Instant::now();
    let (result, _) = run(
        &app,
        &fake,
        &member.access,
        json!({"code": "import time\ntime.sleep(10)\nprint('woke')", "timeout_secs": 20}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["data"]["timed_out"], true, "{result}");
    assert_eq!(result["data"]["stdout"], "", "{result}");
    assert!(
        took < Duration::from_secs(8),
        "ended by the role's limit: {took:?}"
    );
}
