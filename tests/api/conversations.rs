use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

async fn create(app: &TestApp, token: &str, body: Value) -> Value {
    let r = app
        .post_as(token, "/api/conversations")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

#[tokio::test]
async fn create_get_rename_delete() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("rita").await;
    let c = create(&app, &s.access, json!({"title": "  Trip plans  "})).await;
    assert_eq!(c["title"], "Trip plans");
    let id = c["id"].as_str().unwrap();
    // No body at all is fine too.
    let r = app
        .post_as(&s.access, "/api/conversations")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        r.json::<Value>().await.unwrap()["title"],
        "New conversation"
    );

    let got: Value = app
        .get_as(&s.access, &format!("/api/conversations/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["messages"], json!([]));

    let r = app
        .patch_as(&s.access, &format!("/api/conversations/{id}"))
        .json(&json!({"title": "Renamed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["title"], "Renamed");
    let r = app
        .patch_as(&s.access, &format!("/api/conversations/{id}"))
        .json(&json!({"title": "   "}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_title").await;

    let r = app
        .delete_as(&s.access, &format!("/api/conversations/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = app
        .get_as(&s.access, &format!("/api/conversations/{id}"))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}

#[tokio::test]
async fn messages_are_returned_in_order_with_their_fields() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("sam").await;
    let c = create(&app, &s.access, json!({})).await;
    let id: uuid::Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let mut db = app.db().await;
    diesel::sql_query(
        "INSERT INTO messages (id, conversation_id, role, content, tool_calls, tool_call_id, status, status_reason) VALUES
         (gen_random_uuid(), $1, 'user', 'what time is it', NULL, NULL, 'complete', NULL),
         (gen_random_uuid(), $1, 'assistant', '', '[{\"id\":\"c1\",\"name\":\"current_time\",\"arguments\":{}}]', NULL, 'complete', NULL),
         (gen_random_uuid(), $1, 'tool', '{\"success\":true}', NULL, 'c1', 'complete', NULL),
         (gen_random_uuid(), $1, 'assistant', 'It is noon', NULL, NULL, 'incomplete', 'upstream_error')",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .execute(&mut db)
    .await
    .unwrap();
    let got: Value = app
        .get_as(&s.access, &format!("/api/conversations/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let msgs = got["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "current_time");
    assert_eq!(msgs[2]["tool_call_id"], "c1");
    assert_eq!(msgs[3]["status"], "incomplete");
    assert_eq!(msgs[3]["status_reason"], "upstream_error");
}

#[tokio::test]
async fn listing_is_paginated_newest_first() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("tess").await;
    for i in 0..5 {
        create(&app, &s.access, json!({"title": format!("c{i}")})).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = "/api/conversations?limit=2".to_owned();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page: Value = app
            .get_as(&s.access, &path)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for c in page["items"].as_array().unwrap() {
            seen.push(c["title"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ["c4", "c3", "c2", "c1", "c0"]);
    let r = app
        .get_as(&s.access, "/api/conversations?cursor=garbage")
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_cursor").await;
    let r = app
        .get_as(&s.access, "/api/conversations?limit=many")
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_query").await;
}

#[tokio::test]
async fn other_users_conversations_are_invisible() {
    let app = TestApp::builder().start().await;
    let owner = app.signed_up("uma").await;
    let other = app.signed_up("vic").await;
    let c = create(&app, &owner.access, json!({"title": "private"})).await;
    let path = format!("/api/conversations/{}", c["id"].as_str().unwrap());

    expect_error(
        app.get_as(&other.access, &path).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    let r = app
        .patch_as(&other.access, &path)
        .json(&json!({"title": "pwned"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    expect_error(
        app.delete_as(&other.access, &path).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    let list: Value = app
        .get_as(&other.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"], json!([]));

    // Still intact for the owner; even an admin sees another user's as 404.
    let got: Value = app
        .get_as(&owner.access, &path)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["title"], "private");
}

#[tokio::test]
async fn malformed_ids_are_404() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("walt").await;
    let r = app
        .get_as(&s.access, "/api/conversations/not-a-uuid")
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}
