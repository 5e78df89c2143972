//! Finding 10 of the third review (issue 29): a conversation is never loaded whole per
//! request. `GET /api/conversations/{id}` answers a window of the latest messages with a
//! cursor to older ones, exports stream a chunk at a time, and a conversation holds at most
//! `llm.max_conversation_messages`.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::Value;

/// `groups` exchanges of four rows each: a question, an assistant turn calling a tool, its
/// result, and the answer; every row's content names its place (`row N`).
async fn fill_steps(app: &TestApp, conversation: &str, groups: i64) {
    let mut db = app.db().await;
    diesel::sql_query(
        "INSERT INTO messages (id, conversation_id, role, content, tool_calls, tool_call_id) \
         SELECT gen_random_uuid(), $1, \
                (ARRAY['user', 'assistant', 'tool', 'assistant'])[k], \
                'row ' || ((g - 1) * 4 + k), \
                CASE WHEN k = 2 THEN jsonb_build_array(jsonb_build_object( \
                    'id', 'c' || g, 'name', 'calculator', 'arguments', '{}')) END, \
                CASE WHEN k = 3 THEN 'c' || g END \
           FROM generate_series(1, $2) g, generate_series(1, 4) k ORDER BY g, k",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(conversation).unwrap())
    .bind::<diesel::sql_types::BigInt, _>(groups)
    .execute(&mut db)
    .await
    .unwrap();
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    let r = app.get_as(token, path).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

fn contents(page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_long_conversation_is_read_a_window_at_a_time() {
    let (app, [s]) = TestApp::builder().start_as(["reader"]).await;
    let conv = app.new_conversation(&s.access).await;
    fill_steps(&app, &conv, 150).await; // 600 rows
    let path = format!("/api/conversations/{conv}");

    let first = get(&app, &s.access, &path).await;
    let latest = contents(&first);
    assert_eq!(latest.len(), 200, "the default window");
    assert_eq!(latest.last().unwrap(), "row 600");
    assert_eq!(latest[0], "row 401");
    assert!(
        first["messages_before"].is_string(),
        "{}",
        first["messages_before"]
    );

    // Paged back six at a time: every row once, in order, and no page starts inside a tool
    // step (its first row is never a tool result).
    let mut all: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?limit=6&before={c}"),
            None => format!("{path}?limit=6"),
        };
        let page = get(&app, &s.access, &url).await;
        let rows = page["messages"].as_array().unwrap();
        assert!(!rows.is_empty());
        assert_ne!(
            rows[0]["role"], "tool",
            "a page starts inside a tool step: {page}"
        );
        let mut older = contents(&page);
        older.append(&mut all);
        all = older;
        match page["messages_before"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = (1..=600).map(|n| format!("row {n}")).collect();
    assert_eq!(all, expected);

    let r = app
        .get_as(&s.access, &format!("{path}?before=x12"))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_cursor").await;
    // Another user's conversation stays a 404, cursor or not.
    let other = app.signed_up("stranger").await;
    let r = app
        .get_as(&other.access, &format!("{path}?limit=5"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn an_export_streams_every_message_of_a_long_conversation() {
    let (app, [s]) = TestApp::builder().start_as(["archivist"]).await;
    let conv = app.new_conversation(&s.access).await;
    fill_steps(&app, &conv, 750).await; // 3,000 rows: 15 chunks
    let r = app
        .get_as(
            &s.access,
            &format!("/api/conversations/{conv}/export?format=json"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["id"], conv.as_str());
    assert!(doc["exported_at"].is_string());
    let rows = contents(&doc);
    assert_eq!(rows.len(), 3000);
    assert_eq!(rows[0], "row 1");
    assert_eq!(rows[2999], "row 3000");
    assert_eq!(doc["messages"][1]["tool_calls"][0]["name"], "calculator");

    let md = app
        .get_as(&s.access, &format!("/api/conversations/{conv}/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(md.starts_with("# New conversation"), "{}", &md[..80]);
    assert!(md.contains("row 1\n") && md.contains("row 3000\n"));
    assert_eq!(md.matches("**You**").count(), 750);
}

#[tokio::test]
async fn a_full_conversation_takes_no_more_messages() {
    let (app, [s]) = TestApp::builder()
        .settings(|s| s.llm.max_conversation_messages = 4)
        .start_as(["talker"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    for _ in 0..2 {
        let events = app.chat(&s.access, &conv, "hello").await;
        assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    }
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/messages"))
        .json(&serde_json::json!({"content": "one more"}))
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 409, "conversation_full").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4 messages"),
        "{body}"
    );
    // Nothing was stored, the conversation is free for the next request, and a new one works.
    let page = get(&app, &s.access, &format!("/api/conversations/{conv}")).await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 4);
    assert!(page["active_turn"].is_null());
    let fresh = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &fresh, "hello").await;
    assert_eq!(events.last().unwrap().event, "done");
}
