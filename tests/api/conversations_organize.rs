//! Keeping many conversations in order: pin, archive, full-text search over message text,
//! export as Markdown and JSON.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

async fn create(app: &TestApp, token: &str, title: &str) -> String {
    let r = app
        .post_as(token, "/api/conversations")
        .json(&json!({ "title": title }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn patch(app: &TestApp, token: &str, id: &str, body: Value) -> reqwest::Response {
    app.patch_as(token, &format!("/api/conversations/{id}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn titles(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    let page: Value = app
        .get_as(token, &format!("/api/conversations{query}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap().to_owned())
        .collect()
}

/// Stores messages as the agent would have: (role, content, tool_calls).
async fn store(app: &TestApp, conversation: &str, rows: &[(&str, &str, Option<Value>)]) {
    let mut db = app.db().await;
    let id: uuid::Uuid = conversation.parse().unwrap();
    for (role, content, calls) in rows {
        diesel::sql_query(
            "INSERT INTO messages (id, conversation_id, role, content, tool_calls, tool_call_id, status) \
             VALUES (gen_random_uuid(), $1, $2, $3, $4, CASE WHEN $2 = 'tool' THEN 'c1' END, 'complete')",
        )
        .bind::<diesel::sql_types::Uuid, _>(id)
        .bind::<diesel::sql_types::Text, _>(*role)
        .bind::<diesel::sql_types::Text, _>(*content)
        .bind::<diesel::sql_types::Nullable<diesel::sql_types::Jsonb>, _>(calls.clone())
        .execute(&mut db)
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn pinned_come_first_archived_leave_the_list_and_pages_keep_the_order() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("pia").await;
    let a = create(&app, &s.access, "alpha").await;
    let b = create(&app, &s.access, "beta").await;
    let _c = create(&app, &s.access, "gamma").await;
    assert_eq!(
        titles(&app, &s.access, "").await,
        ["gamma", "beta", "alpha"]
    );

    let r = patch(&app, &s.access, &a, json!({"pinned": true})).await;
    assert_eq!(r.status(), 200);
    let pinned: Value = r.json().await.unwrap();
    assert_eq!(pinned["pinned"], true);
    assert_eq!(
        titles(&app, &s.access, "").await,
        ["alpha", "gamma", "beta"]
    );

    let r = patch(&app, &s.access, &b, json!({"archived": true})).await;
    assert!(r.json::<Value>().await.unwrap()["archived_at"].is_string());
    assert_eq!(titles(&app, &s.access, "").await, ["alpha", "gamma"]);
    assert_eq!(titles(&app, &s.access, "?archived=true").await, ["beta"]);

    // Page by page, across the pinned boundary, nothing repeats or goes missing.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("/api/conversations?limit=1&cursor={c}"),
            None => "/api/conversations?limit=1".to_owned(),
        };
        let page: Value = app
            .get_as(&s.access, &q)
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
    assert_eq!(seen, ["alpha", "gamma"]);

    // Unarchive, unpin; an empty change and another user's conversation are refused.
    patch(&app, &s.access, &b, json!({"archived": false})).await;
    patch(&app, &s.access, &a, json!({"pinned": false})).await;
    assert_eq!(
        titles(&app, &s.access, "").await,
        ["gamma", "beta", "alpha"]
    );
    expect_error(
        patch(&app, &s.access, &a, json!({})).await,
        400,
        "nothing_to_change",
    )
    .await;
    let other = app.signed_up("olga").await;
    expect_error(
        patch(&app, &other.access, &a, json!({"pinned": true})).await,
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn search_finds_words_in_messages_and_titles_of_ones_own_conversations_only() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("sofia").await;
    let budget = create(&app, &s.access, "Monday").await;
    store(
        &app,
        &budget,
        &[
            ("user", "Can you check the quarterly budget review?", None),
            ("assistant", "The review looks fine.", None),
        ],
    )
    .await;
    let offsite = create(&app, &s.access, "Tuesday").await;
    store(
        &app,
        &offsite,
        &[
            ("user", "hello", None),
            ("assistant", "Let's plan the offsite in Lisbon.", None),
        ],
    )
    .await;
    // Tool output is not what people wrote: not searched.
    let tools = create(&app, &s.access, "Wednesday").await;
    store(
        &app,
        &tools,
        &[
            (
                "assistant",
                "",
                Some(json!([{"id": "c1", "name": "read_file", "arguments": {}}])),
            ),
            ("tool", "{\"data\": \"budget.csv\"}", None),
        ],
    )
    .await;
    create(&app, &s.access, "Budget ideas").await;
    // Another user's words never show up.
    let other = app.signed_up("oscar").await;
    let theirs = create(&app, &other.access, "Mine").await;
    store(&app, &theirs, &[("user", "my budget is secret", None)]).await;
    // Archived conversations are still found.
    patch(&app, &s.access, &offsite, json!({"archived": true})).await;

    let found: Value = app
        .get_as(&s.access, "/api/conversations?q=budget")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = found["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(names, ["Budget ideas", "Monday"], "{found}");
    assert_eq!(
        items[1]["snippet"],
        "Can you check the quarterly budget review?"
    );
    assert!(items[0]["snippet"].is_null());
    assert_eq!(found["next_cursor"], Value::Null);

    assert_eq!(titles(&app, &s.access, "?q=LISBON").await, ["Tuesday"]);
    assert_eq!(
        titles(&app, &s.access, "?q=%22budget%20review%22").await,
        ["Monday"]
    );
    assert!(titles(&app, &s.access, "?q=secret").await.is_empty());
    // Characters that mean something to LIKE or to the query parser are just text.
    assert!(titles(&app, &s.access, "?q=%25_%5C").await.is_empty());
    let r = app
        .get_as(
            &s.access,
            &format!("/api/conversations?q={}", "x".repeat(201)),
        )
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_query").await;
}

#[tokio::test]
async fn a_conversation_exports_as_markdown_and_as_json() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("ezra").await;
    let id = create(&app, &s.access, "Q3 report: draft #2").await;
    store(
        &app,
        &id,
        &[
            ("user", "what is 6*7", None),
            (
                "assistant",
                "",
                Some(
                    json!([{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]),
                ),
            ),
            ("tool", "{\"success\":true,\"data\":{\"result\":42}}", None),
            ("assistant", "6*7 = 42", None),
        ],
    )
    .await;
    let r = app
        .get_as(&s.access, &format!("/api/conversations/{id}/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let disposition = r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.contains("attachment") && disposition.contains("q3-report-draft-2.md"),
        "{disposition}"
    );
    let md = r.text().await.unwrap();
    assert!(md.starts_with("# Q3 report: draft #2\n"), "{md}");
    assert!(md.contains("**You**"), "{md}");
    assert!(md.contains("what is 6*7"), "{md}");
    assert!(
        md.contains("> Tool call: `calculator` `{\"expression\":\"6*7\"}`"),
        "{md}"
    );
    assert!(md.contains("```json\n{\"success\":true"), "{md}");
    assert!(md.contains("6*7 = 42"), "{md}");

    let r = app
        .get_as(
            &s.access,
            &format!("/api/conversations/{id}/export?format=json"),
        )
        .send()
        .await
        .unwrap();
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains(".json"));
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["title"], "Q3 report: draft #2");
    assert_eq!(doc["messages"].as_array().unwrap().len(), 4);
    assert!(doc["exported_at"].is_string());

    let r = app
        .get_as(
            &s.access,
            &format!("/api/conversations/{id}/export?format=xml"),
        )
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_format").await;
    let other = app.signed_up("odin").await;
    let r = app
        .get_as(&other.access, &format!("/api/conversations/{id}/export"))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
}

#[tokio::test]
async fn a_question_can_be_taken_back_with_everything_after_it() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("tara").await;
    let id = create(&app, &s.access, "edits").await;
    store(
        &app,
        &id,
        &[
            ("user", "first question", None),
            ("assistant", "first answer", None),
            ("user", "second question", None),
            ("assistant", "second answer", None),
        ],
    )
    .await;
    let messages = |app: &TestApp| {
        let path = format!("/api/conversations/{id}");
        let token = s.access.clone();
        let req = app.get_as(&token, &path);
        async move {
            let got: Value = req.send().await.unwrap().json().await.unwrap();
            got["messages"].as_array().unwrap().clone()
        }
    };
    let all = messages(&app).await;
    let second = all[2]["id"].as_str().unwrap().to_owned();
    let answer = all[1]["id"].as_str().unwrap().to_owned();
    let truncate = |token: &str, from: &str| {
        app.post_as(token, &format!("/api/conversations/{id}/truncate"))
            .json(&json!({ "from": from }))
            .send()
    };

    // Only a question of one's own, in one's own conversation.
    expect_error(
        truncate(&s.access, &answer).await.unwrap(),
        404,
        "not_found",
    )
    .await;
    let other = app.signed_up("otto").await;
    expect_error(
        truncate(&other.access, &second).await.unwrap(),
        404,
        "not_found",
    )
    .await;
    // Not while a reply is being generated.
    let mut db = app.db().await;
    diesel::sql_query(
        "UPDATE conversations SET active_turn_id = gen_random_uuid(), active_turn_at = now() WHERE id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(id.parse::<uuid::Uuid>().unwrap())
    .execute(&mut db)
    .await
    .unwrap();
    expect_error(
        truncate(&s.access, &second).await.unwrap(),
        409,
        "turn_in_progress",
    )
    .await;
    assert_eq!(messages(&app).await.len(), 4);
    diesel::sql_query("UPDATE conversations SET active_turn_id = NULL WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(id.parse::<uuid::Uuid>().unwrap())
        .execute(&mut db)
        .await
        .unwrap();

    let r = truncate(&s.access, &second).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["removed"], 2);
    let left: Vec<String> = messages(&app)
        .await
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, ["first question", "first answer"]);
    // Gone means gone: the same id again is unknown.
    expect_error(
        truncate(&s.access, &second).await.unwrap(),
        404,
        "not_found",
    )
    .await;
}

#[derive(diesel::QueryableByName, Debug)]
struct TurnTimes {
    #[diesel(sql_type = diesel::sql_types::Text)]
    title: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    at_question: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    before_answer: bool,
}

/// A conversation is as recent as its last turn's start: the claim sets `updated_at` (as the
/// browser's list does on send), and the release, which then changes no indexed column,
/// leaves it (issue 43: a HOT update).
#[tokio::test]
async fn a_conversation_is_as_recent_as_its_last_turns_start() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("rita").await;
    let a = create(&app, &s.access, "alpha").await;
    let b = create(&app, &s.access, "beta").await;
    app.chat(&s.access, &a, "first").await;
    app.chat(&s.access, &b, "second").await;
    assert_eq!(titles(&app, &s.access, "").await, ["beta", "alpha"]);
    app.chat(&s.access, &a, "third").await;
    assert_eq!(titles(&app, &s.access, "").await, ["alpha", "beta"]);

    let mut db = app.db().await;
    let times: Vec<TurnTimes> = diesel::sql_query(
        "SELECT c.title, c.updated_at = q.created_at AS at_question, \
                c.updated_at < r.created_at AS before_answer \
           FROM conversations c \
           JOIN LATERAL (SELECT created_at FROM messages WHERE conversation_id = c.id \
                          AND role = 'user' ORDER BY seq DESC LIMIT 1) q ON true \
           JOIN LATERAL (SELECT created_at FROM messages WHERE conversation_id = c.id \
                          AND role = 'assistant' ORDER BY seq DESC LIMIT 1) r ON true \
          WHERE c.user_id = $1 ORDER BY c.title",
    )
    .bind::<diesel::sql_types::Uuid, _>(s.user_id)
    .load(&mut db)
    .await
    .unwrap();
    let titles: Vec<&str> = times.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["alpha", "beta"]);
    assert!(
        times.iter().all(|t| t.at_question && t.before_answer),
        "updated_at is the last question's time, before its answer: {times:?}"
    );
}
