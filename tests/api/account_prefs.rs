//! Account preferences (theme, default model) that follow the user, and a conversation's own
//! model and instructions (issue 22 item 7).

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

fn two_models(s: &mut agentchat::config::Settings) {
    s.llm.models = vec!["demo".into(), "demo-large".into()];
}

async fn prefs_patch(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.patch_as(token, "/api/me/preferences")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get_json(app: &TestApp, token: &str, path: &str) -> Value {
    let r = app.get_as(token, path).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

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

async fn patch_conv(app: &TestApp, token: &str, id: &str, body: Value) -> reqwest::Response {
    app.patch_as(token, &format!("/api/conversations/{id}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn preferences_follow_the_account_and_are_validated() {
    let app = TestApp::builder().settings(two_models).start().await;
    let me = app.signed_up("pia").await;
    let fresh = get_json(&app, &me.access, "/api/me/preferences").await;
    assert_eq!(fresh, json!({"theme": "system", "default_model": null}));

    let r = prefs_patch(&app, &me.access, json!({"theme": "dark"})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["theme"], "dark");
    // Another browser (a new sign-in) gets the same theme, on /api/me too.
    let other = app.session_for("pia", "password-of-pia").await;
    let me2 = get_json(&app, &other.access, "/api/me").await;
    assert_eq!(me2["preferences"]["theme"], "dark");

    expect_error(
        prefs_patch(&app, &me.access, json!({"theme": "blue"})).await,
        400,
        "invalid_json",
    )
    .await;
    expect_error(
        prefs_patch(&app, &me.access, json!({})).await,
        400,
        "nothing_to_change",
    )
    .await;
    expect_error(
        prefs_patch(&app, &me.access, json!({"colour": "dark"})).await,
        400,
        "invalid_json",
    )
    .await;
    let refused = expect_error(
        prefs_patch(&app, &me.access, json!({"default_model": "gpt-9"})).await,
        422,
        "unknown_model",
    )
    .await;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("gpt-9") && message.contains("demo-large"),
        "{message}"
    );
    let long = "m".repeat(100_000);
    let refused = expect_error(
        prefs_patch(&app, &me.access, json!({"default_model": long})).await,
        422,
        "unknown_model",
    )
    .await;
    assert!(refused["error"]["message"].as_str().unwrap().len() < 400);

    // The default model: new chats start with it; `null` goes back to the server's.
    let r = prefs_patch(&app, &me.access, json!({"default_model": "demo-large"})).await;
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"theme": "dark", "default_model": "demo-large"})
    );
    assert_eq!(
        create(&app, &me.access, json!({})).await["model"],
        "demo-large"
    );
    // An explicit model still wins.
    assert_eq!(
        create(&app, &me.access, json!({"model": "demo"})).await["model"],
        "demo"
    );
    let r = prefs_patch(&app, &me.access, json!({"default_model": null})).await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["default_model"],
        Value::Null
    );
    assert_eq!(
        create(&app, &me.access, json!({})).await["model"],
        Value::Null
    );

    // A default the server no longer offers (set before a configuration change) is not
    // used: the chat gets the server's default.
    let mut db = app.db().await;
    diesel::sql_query("UPDATE users SET default_model = 'retired-model' WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(me.user_id)
        .execute(&mut db)
        .await
        .unwrap();
    assert_eq!(
        create(&app, &me.access, json!({})).await["model"],
        Value::Null
    );
    let shown = get_json(&app, &me.access, "/api/me/preferences").await;
    assert_eq!(shown["default_model"], "retired-model");
}

#[tokio::test]
async fn a_conversation_model_and_instructions_are_used_after_the_server_prompt() {
    let fake = FakeUpstream::start().await;
    let (app, [me, intruder]) = TestApp::builder()
        .openai(&fake)
        .models(&["fake-small", "fake-large"])
        .settings(|s| s.llm.system_prompt = "SERVER RULES: be safe.".into())
        .start_as(["sam", "ivy"])
        .await;
    let conv = create(&app, &me.access, json!({})).await;
    let id = conv["id"].as_str().unwrap();
    assert_eq!(conv["system_prompt"], Value::Null);

    // Bounded and checked.
    expect_error(
        patch_conv(&app, &me.access, id, json!({"model": "nope"})).await,
        422,
        "unknown_model",
    )
    .await;
    expect_error(
        patch_conv(
            &app,
            &me.access,
            id,
            json!({"system_prompt": "x".repeat(4001)}),
        )
        .await,
        400,
        "invalid_system_prompt",
    )
    .await;
    // Another user's conversation is not found, and stays as it was.
    expect_error(
        patch_conv(
            &app,
            &intruder.access,
            id,
            json!({"system_prompt": "leak everything"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;

    let r = patch_conv(
        &app,
        &me.access,
        id,
        json!({"model": "fake-large", "system_prompt": "  Answer in French.  "}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let changed: Value = r.json().await.unwrap();
    assert_eq!(changed["model"], "fake-large");
    assert_eq!(changed["system_prompt"], "Answer in French.");
    // The longest allowed is accepted.
    let r = patch_conv(
        &app,
        &me.access,
        id,
        json!({"system_prompt": "y".repeat(4000)}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let r = patch_conv(
        &app,
        &me.access,
        id,
        json!({"system_prompt": "Answer in French."}),
    )
    .await;
    assert_eq!(r.status(), 200);

    fake.push(Reply::text("Bonjour."));
    app.chat(&me.access, id, "hello").await;
    let sent = fake.requests();
    let first = &sent.last().unwrap()["body"];
    assert_eq!(first["model"], "fake-large");
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(system.starts_with("SERVER RULES: be safe."), "{system}");
    assert!(system.ends_with("Answer in French."), "{system}");
    assert_eq!(
        first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system")
            .count(),
        1
    );

    // Removed (null): the server's prompt alone; the model switch holds.
    let r = patch_conv(
        &app,
        &me.access,
        id,
        json!({"system_prompt": null, "model": "fake-small"}),
    )
    .await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["system_prompt"],
        Value::Null
    );
    fake.push(Reply::text("Hi."));
    app.chat(&me.access, id, "again").await;
    let second = fake.requests().last().unwrap()["body"].clone();
    assert_eq!(second["model"], "fake-small");
    assert_eq!(second["messages"][0]["content"], "SERVER RULES: be safe.");
    let stored = app.conversation(&me.access, id).await;
    assert_eq!(stored["model"], "fake-small");
    assert_eq!(stored["system_prompt"], Value::Null);
}
