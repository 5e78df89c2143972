//! Memory (issue 32, DESIGN §14): per-user notes pinned into the prompt under the system
//! prompt, bounded, editable, off per user and per conversation; the model keeps one with
//! the `remember` tool, an allowlisted tool like any other.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::knowledge_support::send;
use crate::openai_sdk::MODEL;

async fn note(app: &TestApp, token: &str, text: &str) -> (u16, Value) {
    send(
        app,
        reqwest::Method::POST,
        token,
        "/api/me/memory",
        Some(json!({ "text": text })),
    )
    .await
}

/// The system prompt of the next model call a chat message makes.
async fn prompt_of_next_chat(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    conv: &str,
) -> String {
    fake.push(Reply::text("ok"));
    let before = fake.requests().len();
    app.chat(token, conv, "hello").await;
    fake.requests()[before]["body"]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn notes_are_bounded_owned_and_pinned_under_the_system_prompt() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, ann, bob]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .settings(|s| {
            s.memory.max_notes = 2;
            s.memory.max_note_chars = 80;
            s.llm.system_prompt = "SERVER RULES".into();
        })
        .start_as(["boss", "ann", "bob"])
        .await;
    let (status, first) = note(&app, &ann.access, "My team is Falcon").await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["source"], "user");
    let (status, err) = note(&app, &ann.access, &"x".repeat(81)).await;
    assert_eq!(
        (status, err["error"]["code"].as_str()),
        (422, Some("invalid_note"))
    );
    assert_eq!(
        note(&app, &ann.access, "Prefers short answers").await.0,
        201
    );
    let (status, err) = note(&app, &ann.access, "A third").await;
    assert_eq!(
        (status, err["error"]["code"].as_str()),
        (422, Some("memory_full")),
        "{err}"
    );

    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(mine["enabled"], true);
    assert_eq!(mine["notes"].as_array().unwrap().len(), 2);
    assert_eq!(mine["limits"]["max_notes"], 2);
    assert!(mine["used_tokens"].as_u64().unwrap() > 0);
    let id = first["id"].as_str().unwrap();
    // Someone else's note is not there for them.
    for method in [reqwest::Method::PUT, reqwest::Method::DELETE] {
        let (status, _) = send(
            &app,
            method,
            &bob.access,
            &format!("/api/me/memory/{id}"),
            Some(json!({"text": "mine now"})),
        )
        .await;
        assert_eq!(status, 404);
    }
    let (status, edited) = send(
        &app,
        reqwest::Method::PUT,
        &ann.access,
        &format!("/api/me/memory/{id}"),
        Some(json!({"text": "My team is Osprey"})),
    )
    .await;
    assert_eq!(
        (status, edited["text"].as_str()),
        (200, Some("My team is Osprey"))
    );

    let conv = app.new_conversation(&ann.access).await;
    let prompt = prompt_of_next_chat(&app, &fake, &ann.access, &conv).await;
    let rules = prompt.find("SERVER RULES").unwrap();
    let notes = prompt
        .find("My team is Osprey")
        .expect("the note is in the prompt");
    assert!(
        rules < notes && prompt.contains("never override"),
        "{prompt}"
    );
    assert!(prompt.contains("Prefers short answers"));
    // Bob's prompt has none of Ann's notes.
    let bobs = app.new_conversation(&bob.access).await;
    assert!(!prompt_of_next_chat(&app, &fake, &bob.access, &bobs)
        .await
        .contains("Osprey"));

    // Off for this conversation, then off for the account: the notes stay but are not sent.
    let (status, _) = send(
        &app,
        reqwest::Method::PATCH,
        &ann.access,
        &format!("/api/conversations/{conv}"),
        Some(json!({"memory_enabled": false})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!prompt_of_next_chat(&app, &fake, &ann.access, &conv)
        .await
        .contains("Osprey"));
    let other = app.new_conversation(&ann.access).await;
    assert!(prompt_of_next_chat(&app, &fake, &ann.access, &other)
        .await
        .contains("Osprey"));
    let (status, _) = send(
        &app,
        reqwest::Method::PUT,
        &ann.access,
        "/api/me/memory/settings",
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!prompt_of_next_chat(&app, &fake, &ann.access, &other)
        .await
        .contains("Osprey"));
    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(
        (
            mine["enabled"].as_bool(),
            mine["notes"].as_array().unwrap().len()
        ),
        (Some(false), 2)
    );
    let (status, _) = send(
        &app,
        reqwest::Method::DELETE,
        &ann.access,
        &format!("/api/me/memory/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
}

#[tokio::test]
async fn the_model_remembers_through_an_allowlisted_tool() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "ann"])
        .await;
    let conv = app.new_conversation(&ann.access).await;
    fake.push(Reply::tool_call(
        "c1",
        "remember",
        json!({"text": "Likes tea"}).to_string(),
    ));
    fake.push(Reply::text("Noted."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "I like tea, remember it")
        .await;
    let offered = fake.requests()[before]["body"]["tools"].to_string();
    assert!(offered.contains("\"remember\""));
    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(mine["notes"][0]["text"], "Likes tea");
    assert_eq!(mine["notes"][0]["source"], "model");

    // Memory off: the tool keeps nothing and says why.
    send(
        &app,
        reqwest::Method::PUT,
        &ann.access,
        "/api/me/memory/settings",
        Some(json!({"enabled": false})),
    )
    .await;
    fake.push(Reply::tool_call(
        "c2",
        "remember",
        json!({"text": "Likes coffee"}).to_string(),
    ));
    fake.push(Reply::text("Fine."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "remember coffee").await;
    let result = fake.requests()[before + 1]["body"]["messages"].to_string();
    assert!(
        result.contains("memory off") || result.contains("turned memory off"),
        "{result}"
    );
    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(mine["notes"].as_array().unwrap().len(), 1);

    // An admin takes the tool away from the role: not offered, and refused when named anyway.
    send(
        &app,
        reqwest::Method::PUT,
        &ann.access,
        "/api/me/memory/settings",
        Some(json!({"enabled": true})),
    )
    .await;
    let r = app
        .put_role(&admin.access, "member", json!({"tools": ["calculator"]}))
        .await;
    assert_eq!(r.status(), 200);
    fake.push(Reply::tool_call(
        "c3",
        "remember",
        json!({"text": "Likes cocoa"}).to_string(),
    ));
    fake.push(Reply::text("Hm."));
    let before = fake.requests().len();
    app.chat(&ann.access, &conv, "remember cocoa").await;
    assert!(!fake.requests()[before]["body"]["tools"]
        .to_string()
        .contains("\"remember\""));
    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(mine["notes"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_demo_model_remembers_what_it_is_told_to() {
    let (app, [_admin, ann]) = TestApp::builder().start_as(["boss", "ann"]).await;
    let conv = app.new_conversation(&ann.access).await;
    let events = app
        .chat(&ann.access, &conv, "Remember that my team is Falcon.")
        .await;
    assert!(
        streamed_text(&events).contains("my team is Falcon"),
        "{events:?}"
    );
    let (_, mine) = send(
        &app,
        reqwest::Method::GET,
        &ann.access,
        "/api/me/memory",
        None,
    )
    .await;
    assert_eq!(mine["notes"][0]["text"], "my team is Falcon");
}
