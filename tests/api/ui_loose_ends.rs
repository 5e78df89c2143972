//! Issue 42 items 8 and 9, the server side of what the browser showed: a refusal that names
//! who must decide a waiting call, titles of chats with attachments, assistant names with
//! spaces (also as `/v1` models), chat search inside path-like words, and a copy that says
//! what it was copied from.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::approvals::{approving, finish, write_call};
use crate::knowledge_support::send;
use crate::openai_sdk::MODEL;

/// A member's chat waits for a call only an admin decides: the refusal says so (the user
/// cannot "decide it above"); a call the user decides keeps the user's wording.
#[tokio::test]
async fn a_message_to_a_chat_waiting_for_an_admin_is_refused_naming_the_admin() {
    for (approver, says) in [
        (
            "admin",
            "An admin must approve or deny the pending call first",
        ),
        ("user", "decide it"),
    ] {
        let fake = FakeUpstream::start().await;
        let (app, [_admin, ann]) = approving(&fake, approver).start_as(["boss", "ann"]).await;
        fake.push(write_call("c1", "a.txt", "text"));
        let conv = app.new_conversation(&ann.access).await;
        let events = app.chat(&ann.access, &conv, "write it").await;
        assert_eq!(finish(&events), "awaiting_approval");
        let r = app.send_message(&ann.access, &conv, "hello?").await;
        let body = expect_error(r, 409, "approval_pending").await;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{approver}: {body}");
        assert_eq!(body["error"]["details"]["approver"], approver, "{body}");
    }
}

/// The conversation once its title is no longer the default (or after `wait`).
async fn titled(app: &TestApp, token: &str, id: &str, wait: Duration) -> Value {
    let until = Instant::now() + wait;
    loop {
        let c = app.conversation(token, id).await;
        if c["title_auto"] == false || Instant::now() > until {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The title is made from what the user wrote, not from the note that names the attached
/// files (the demo's title of "summarise this report please" ended in "Attached files").
#[tokio::test]
async fn a_chat_with_attachments_is_titled_by_its_words_not_the_file_note() {
    let (app, [me]) = TestApp::builder()
        .settings(|s| s.llm.auto_titles = true)
        .start_as(["dee"])
        .await;
    app.upload(&me.access, "notes/q3.txt", "ship the importer")
        .await;
    let id = app.new_conversation(&me.access).await;
    let r = app
        .post_as(&me.access, &format!("/api/conversations/{id}/messages"))
        .json(&json!({"content": "summarise this report please", "attachments": ["notes/q3.txt"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let c = titled(&app, &me.access, &id, Duration::from_secs(10)).await;
    assert_eq!(c["title"], "summarise this report please", "{c}");
}

/// "Trip planner" is a name; on `/v1` it is listed as `assistant:Trip-planner`, and both
/// that and the name as written reach it.
#[tokio::test]
async fn an_assistant_name_may_have_spaces_and_stays_a_v1_model() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "ann"])
        .await;
    let post = reqwest::Method::POST;
    let (status, made) = send(
        &app,
        post.clone(),
        &admin.access,
        "/api/admin/assistants",
        Some(json!({"name": "  Trip   planner ", "instructions": "Plan trips."})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["name"], "Trip planner");
    let (status, bad) = send(
        &app,
        post.clone(),
        &admin.access,
        "/api/admin/assistants",
        Some(json!({"name": "a/b", "instructions": "x"})),
    )
    .await;
    assert_eq!(status, 422, "{bad}");

    let (_, key) = send(
        &app,
        post.clone(),
        &ann.access,
        "/api/keys",
        Some(json!({"name": "k"})),
    )
    .await;
    let key = key["key"].as_str().unwrap().to_owned();
    let (_, models) = send(&app, reqwest::Method::GET, &key, "/v1/models", None).await;
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"assistant:Trip-planner"), "{ids:?}");
    for model in [
        "assistant:Trip-planner",
        "assistant:Trip planner",
        "assistant:trip-PLANNER",
    ] {
        fake.push(Reply::text("Pack light."));
        let (status, answer) = send(
            &app,
            post.clone(),
            &key,
            "/v1/chat/completions",
            Some(json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
        assert_eq!(status, 200, "{model}: {answer}");
        assert_eq!(answer["choices"][0]["message"]["content"], "Pack light.");
    }
}

async fn search(app: &TestApp, token: &str, q: &str) -> Vec<String> {
    let r: Value = app
        .get_as(token, &format!("/api/conversations?q={q}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A word inside a path-like token ("Asia/Tokyo", a URL) is found; the whole token too.
#[tokio::test]
async fn chat_search_finds_a_word_inside_a_path_like_token() {
    let (app, [_root, me]) = TestApp::builder().start_as(["root", "sam"]).await;
    let conv = app.new_conversation(&me.access).await;
    // Not in the first message: the title (made from it) is matched on its own.
    app.chat(&me.access, &conv, "hello").await;
    app.chat(
        &me.access,
        &conv,
        "my clock says Asia/Tokyo, see wiki.example.org/handbook",
    )
    .await;
    let other = app.new_conversation(&me.access).await;
    app.chat(&me.access, &other, "hello there").await;
    for q in ["Tokyo", "asia", "Asia%2FTokyo", "handbook"] {
        assert_eq!(search(&app, &me.access, q).await, vec![conv.clone()], "{q}");
    }
    let c = app.conversation(&me.access, &conv).await;
    assert!(
        !c["title"].as_str().unwrap_or_default().contains("Tokyo"),
        "{c}"
    );
}

/// A copy of one's own chat names its original (the sidebar marks it); the original and
/// other chats name none.
#[tokio::test]
async fn a_copy_names_the_chat_it_was_copied_from() {
    let (app, [_root, me]) = TestApp::builder().start_as(["root", "cat"]).await;
    let conv = app.new_conversation(&me.access).await;
    app.chat(&me.access, &conv, "what is 2+2").await;
    let original = app.conversation(&me.access, &conv).await;
    let last = original["messages"].as_array().unwrap().last().unwrap()["id"].clone();
    let r = app
        .post_as(&me.access, &format!("/api/conversations/{conv}/fork"))
        .json(&json!({"at_message_id": last}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let copy: Value = r.json().await.unwrap();
    assert_eq!(copy["forked_from"], conv.as_str(), "{copy}");
    let listed: Value = app
        .get_as(&me.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = listed["items"].as_array().unwrap();
    let find = |id: &Value| items.iter().find(|c| c["id"] == *id).cloned().unwrap();
    assert_eq!(find(&copy["id"])["forked_from"], conv.as_str());
    assert_eq!(find(&json!(conv))["forked_from"], Value::Null);
}
