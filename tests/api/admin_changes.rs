//! Issue 22 item 8: the admin audit trail (every administrative change, filtered, paginated,
//! exported as CSV without secrets or live formulas). The read-only conversation view and
//! budget refusals are in `admin_reading.rs`.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

pub(crate) async fn changes(app: &TestApp, token: &str, query: &str) -> Value {
    let r = app
        .get_as(token, &format!("/api/admin/changes{query}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{query}");
    r.json().await.unwrap()
}

fn kinds(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// Splits CSV text into rows of cells (RFC 4180: quoted cells may hold `,`, `"` and line
/// breaks).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut cell) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    rows
}

#[tokio::test]
async fn every_administrative_change_is_recorded_without_secrets() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let member = app.signed_up("member1").await;
    let a = &admin.access;
    let send = |method: reqwest::Method, path: String, body: Value| {
        app.client
            .request(method, app.url(&path))
            .bearer_auth(a)
            .json(&body)
            .send()
    };
    use reqwest::Method as M;
    let users = "/api/admin/users".to_owned();
    let r = send(
        M::POST,
        users.clone(),
        json!({"username": "made", "password": "made-password-1", "role": "member"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let member_path = format!("/api/admin/users/{}", member.user_id);
    for body in [
        json!({"token_budget": 5000}),
        json!({"role": "admin"}),
        json!({"disabled": true}),
    ] {
        assert_eq!(
            send(M::PATCH, member_path.clone(), body)
                .await
                .unwrap()
                .status(),
            200
        );
    }
    // Saving what is already there is not a change.
    assert_eq!(
        send(M::PATCH, member_path.clone(), json!({"disabled": true}))
            .await
            .unwrap()
            .status(),
        200
    );
    let r = app
        .put_role(
            a,
            "member",
            json!({"tools": ["calculator"], "token_budget": 100000}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app.put_role(a, "auditors", json!({"tools": []})).await;
    assert_eq!(r.status(), 201);
    let tool = json!({"name": "weather", "description": "d", "parameters": {"type": "object"},
        "method": "GET", "url_template": "https://example.com/w", "headers": {"Authorization": "Bearer tool-secret-1"}});
    assert_eq!(
        send(M::POST, "/api/admin/tools/custom".into(), tool.clone())
            .await
            .unwrap()
            .status(),
        201
    );
    let mut edited = tool.clone();
    edited["description"] = json!("new description");
    edited["headers"] = json!({"Authorization": "Bearer tool-secret-2"});
    assert_eq!(
        send(M::PUT, "/api/admin/tools/custom/weather".into(), edited)
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        send(
            M::DELETE,
            "/api/admin/tools/custom/weather".into(),
            json!({})
        )
        .await
        .unwrap()
        .status(),
        204
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mcp = json!({"name": "down", "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Api-Key": "mcp-secret-1"}, "timeout_ms": 1000});
    let r = send(M::POST, "/api/admin/mcp-servers".into(), mcp)
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(
        send(M::DELETE, "/api/admin/mcp-servers/down".into(), json!({}))
            .await
            .unwrap()
            .status(),
        204
    );
    let made = app.session_for("made", "made-password-1").await;
    let key: Value = app
        .post_as(&made.access, "/api/keys")
        .json(&json!({"name": "ci"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = send(
        M::DELETE,
        format!("/api/admin/keys/{}", key["id"].as_str().unwrap()),
        json!({}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 204);

    let text = app
        .get_as(a, "/api/admin/changes?limit=100")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for secret in [
        "made-password-1",
        "tool-secret-1",
        "tool-secret-2",
        "mcp-secret-1",
        key["key"].as_str().unwrap(),
    ] {
        assert!(!text.contains(secret), "a secret in the trail: {secret}");
    }
    let all: Value = serde_json::from_str(&text).unwrap();
    let mut got = kinds(&all);
    got.reverse();
    assert_eq!(
        got,
        [
            "user.create",
            "user.update",
            "user.update",
            "user.update",
            "role.update",
            "role.create",
            "custom_tool.create",
            "custom_tool.update",
            "custom_tool.delete",
            "mcp_server.create",
            "mcp_server.delete",
            "api_key.revoke",
        ]
    );
    let items = all["items"].as_array().unwrap();
    assert!(items
        .iter()
        .all(|r| r["actor_name"] == "root" && r["actor_id"] == admin.user_id.to_string()));
    let role = items.iter().find(|r| r["kind"] == "role.update").unwrap();
    assert_eq!(role["target"], "member");
    assert_eq!(role["after"]["tools"], json!(["calculator"]));
    assert_eq!(role["after"]["token_budget"], 100000);
    assert_ne!(role["before"]["tools"], role["after"]["tools"]);
    let budget = items
        .iter()
        .rev()
        .find(|r| r["kind"] == "user.update")
        .unwrap();
    assert_eq!(
        (
            budget["before"]["token_budget"].clone(),
            budget["after"]["token_budget"].clone()
        ),
        (Value::Null, json!(5000))
    );
    let tool = items
        .iter()
        .find(|r| r["kind"] == "custom_tool.update")
        .unwrap();
    assert_eq!(tool["after"]["header_values_changed"], true);
    assert_eq!(tool["after"]["headers"], json!(["Authorization"]));

    // Filters: kind prefix, actor, target, time range; pages follow the cursor.
    assert_eq!(kinds(&changes(&app, a, "?kind=user.").await).len(), 4);
    assert_eq!(
        kinds(&changes(&app, a, "?kind=custom_tool.delete").await),
        ["custom_tool.delete"]
    );
    assert_eq!(
        kinds(&changes(&app, a, "?actor=ROOT&target=member1").await).len(),
        3
    );
    assert_eq!(
        kinds(&changes(&app, a, &format!("?target={}", member.user_id)).await).len(),
        3
    );
    assert_eq!(kinds(&changes(&app, a, "?actor=nobody").await).len(), 0);
    assert_eq!(
        kinds(&changes(&app, a, "?until=2000-01-01T00:00:00Z").await).len(),
        0
    );
    assert_eq!(
        kinds(&changes(&app, a, "?since=2000-01-01T00:00:00Z").await).len(),
        12
    );
    let first = changes(&app, a, "?limit=5").await;
    let cursor = first["next_cursor"].as_i64().unwrap();
    let second = changes(&app, a, &format!("?limit=5&cursor={cursor}")).await;
    assert_eq!(kinds(&second).len(), 5);
    assert!(second["items"][0]["id"].as_i64().unwrap() < cursor);
    let r = app
        .get_as(a, &format!("/api/admin/changes?target={}", "x".repeat(500)))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_filter").await;
    let r = app
        .get_as(&made.access, "/api/admin/changes")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
}

#[tokio::test]
async fn both_audits_export_as_csv_with_filters_quoting_and_defused_formulas() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("root").await;
    let member = app.signed_up("member1").await;
    let mut db = app.db().await;
    // Rows with text a user or a model chose: formulas, commas, quotes, line breaks.
    diesel::sql_query(
        "INSERT INTO audit_log (user_id, username, tool, tool_call_id, arguments, outcome, error, duration_ms, result_bytes) VALUES \
         ($1, 'member1', '=HYPERLINK(\"http://evil\")', '@SUM(A1)', '{\"q\": \"a, \\\"b\\\"\"}', 'error', E'+1 line\\nbreak', 3, 0), \
         (NULL, 'someone', 'calculator', 'c2', '{}', 'ok', NULL, 1, 2)",
    )
    .bind::<diesel::sql_types::Uuid, _>(member.user_id)
    .execute(&mut db)
    .await
    .unwrap();
    let r = app
        .get_as(&admin.access, "/api/admin/audit?user=member1")
        .header("Accept", "text/csv")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("attachment"));
    let rows = parse_csv(&r.text().await.unwrap());
    assert_eq!(
        rows.len(),
        2,
        "the header and the one matching row: {rows:?}"
    );
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let row = &rows[1];
    assert_eq!(row[col("user")], "member1");
    assert_eq!(row[col("tool")], "'=HYPERLINK(\"http://evil\")");
    assert_eq!(row[col("tool_call_id")], "'@SUM(A1)");
    assert_eq!(row[col("error")], "'+1 line\nbreak");
    assert_eq!(row[col("arguments")], r#"{"q":"a, \"b\""}"#);
    assert!(rows
        .iter()
        .flatten()
        .all(|c| !c.starts_with(['=', '+', '-', '@'])));
    let all = app
        .get_as(&admin.access, "/api/admin/audit?format=csv")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(parse_csv(&all).len(), 3);

    // The admin trail exports the same way, filters applied.
    app.set_budget(&admin.access, member.user_id, Some(42))
        .await;
    app.put_role(&admin.access, "member", json!({"tools": []}))
        .await;
    let text = app
        .get_as(
            &admin.access,
            "/api/admin/changes?format=csv&kind=user.update",
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rows = parse_csv(&text);
    assert_eq!(
        rows[0][..5],
        ["id", "time_utc", "actor", "actor_id", "kind"]
    );
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(rows[1][4], "user.update");
    let after: Value = serde_json::from_str(&rows[1][8]).unwrap();
    assert_eq!(after["token_budget"], 42);
    let r = app
        .get_as(&member.access, "/api/admin/audit?format=csv")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
}
