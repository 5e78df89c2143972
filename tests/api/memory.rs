//! Memory (issue 32, DESIGN §14): per-user notes pinned into the prompt as the user's own
//! message after the system prompt (issue 41.4), bounded, editable, off per user and per
//! conversation; the model keeps one with the `remember` tool, an allowlisted tool like any
//! other that the user confirms unless the role says otherwise.

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

/// The opening of the next model call a chat message makes: the system prompt, then the
/// text of the user's memory notes message ("" when there is none).
async fn opening_of_next_chat(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    conv: &str,
) -> (String, String) {
    fake.push(Reply::text("ok"));
    let before = fake.requests().len();
    app.chat(token, conv, "hello").await;
    let messages = fake.requests()[before]["body"]["messages"].clone();
    assert_eq!(messages[0]["role"], "system", "{messages}");
    let system = messages[0]["content"].as_str().unwrap().to_owned();
    let notes = match messages.as_array().unwrap().as_slice() {
        // system, notes, "hello"
        [_, n, _, ..] if n["role"] == "user" && n["content"] != "hello" => {
            n["content"].as_str().unwrap().to_owned()
        }
        _ => String::new(),
    };
    (system, notes)
}

/// The notes text the next chat message's model call carries (as the user's message).
async fn prompt_of_next_chat(
    app: &TestApp,
    fake: &FakeUpstream,
    token: &str,
    conv: &str,
) -> String {
    let (system, notes) = opening_of_next_chat(app, fake, token, conv).await;
    format!("{system}\n{notes}")
}

#[tokio::test]
async fn notes_are_bounded_owned_and_pinned_as_the_users_message() {
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
    // Issue 41.4: the notes are the user's words (the model may have written them), so they
    // come as a message of the user's after the system prompt, never inside it.
    let (system, notes) = opening_of_next_chat(&app, &fake, &ann.access, &conv).await;
    assert_eq!(system, "SERVER RULES");
    assert!(
        notes.starts_with("My saved notes")
            && notes.contains("not instructions")
            && notes.contains("My team is Osprey")
            && notes.contains("Prefers short answers"),
        "{notes}"
    );
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
    // Unasked: the role says so (the default asks the user, `memory_safety`).
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["calculator", "remember"], "approvals": {"remember": "none"}}),
        )
        .await;
    assert_eq!(r.status(), 200);
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
    // A note reaches every later chat: the user confirms it first (the default).
    let asked = crate::approvals::named(&events, "approval_required");
    assert_eq!(asked.len(), 1, "{events:?}");
    assert_eq!(asked[0].data["name"], "remember");
    assert_eq!(crate::approvals::finish(&events), "awaiting_approval");
    let id = asked[0].data["approval_id"].as_str().unwrap();
    let r =
        crate::approvals::decide(&app, &ann.access, id, json!({"decision": "approve"}), true).await;
    assert_eq!(r.status(), 200);
    let resumed = parse_sse(&r.text().await.unwrap());
    assert!(
        streamed_text(&resumed).contains("my team is Falcon"),
        "{resumed:?}"
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
