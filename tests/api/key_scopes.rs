//! Finding 6 of the third review (issue 29): a personal API key reaches the workspace file
//! tools only when it was made with the `files` scope. Scopes are chosen at creation and
//! listed with the key; a `/v1` turn of a key without `files` is neither offered the file
//! tools nor able to run them when the model names one anyway.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::key_lifetime::{create as create_key, listed_keys};
use crate::openai_sdk::MODEL;

/// Runs a `/v1` call whose model reads `notes.txt`, then answers; the tools the model was
/// offered, and the tool result it was given.
async fn read_notes_through(
    app: &TestApp,
    fake: &FakeUpstream,
    key: &str,
) -> (Vec<String>, String) {
    let before = fake.requests().len();
    fake.push(Reply::tool_call(
        "c1",
        "read_file",
        json!({"path": "notes.txt"}).to_string(),
    ));
    fake.push(Reply::text("done"));
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": MODEL, "messages": [{"role": "user", "content": "read my notes"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let requests = fake.requests();
    let first = &requests[before]["body"];
    let offered = first["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let second = &requests[before + 1]["body"];
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap_or_default();
    (offered, result)
}

#[tokio::test]
async fn file_tools_on_v1_need_a_key_with_the_files_scope() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin, s]) = TestApp::builder()
        .openai(&fake)
        .model(MODEL)
        .start_as(["boss", "writer"])
        .await;
    app.upload(&s.access, "notes.txt", "the secret plans").await;

    let r = create_key(&app, &s.access, json!({"name": "chat only"})).await;
    assert_eq!(r.status(), 201);
    let chat: Value = r.json().await.unwrap();
    assert_eq!(chat["scopes"], json!(["chat"]));
    let r = create_key(
        &app,
        &s.access,
        json!({"name": "with files", "scopes": ["chat", "files"]}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let files: Value = r.json().await.unwrap();
    assert_eq!(files["scopes"], json!(["chat", "files"]));
    let bad = create_key(&app, &s.access, json!({"name": "x", "scopes": ["admin"]})).await;
    let body = expect_error(bad, 422, "invalid_scopes").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`admin`"),
        "{body}"
    );

    let listed = listed_keys(&app, &s.access).await;
    let scopes: Vec<&Value> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["scopes"])
        .collect();
    assert_eq!(
        scopes,
        [&json!(["chat", "files"]), &json!(["chat"])],
        "{listed}"
    );

    // Without `files`: not offered, and refused when the model names it anyway.
    let (offered, result) = read_notes_through(&app, &fake, chat["key"].as_str().unwrap()).await;
    assert!(!offered.iter().any(|t| t == "read_file"), "{offered:?}");
    assert!(offered.iter().any(|t| t == "calculator"), "{offered:?}");
    assert!(result.contains("without the `files` scope"), "{result}");
    assert!(!result.contains("secret plans"), "{result}");

    // With `files`: offered and run.
    let (offered, result) = read_notes_through(&app, &fake, files["key"].as_str().unwrap()).await;
    assert!(offered.iter().any(|t| t == "read_file"), "{offered:?}");
    assert!(result.contains("the secret plans"), "{result}");

    // An access token on /v1 is not limited by scopes.
    let (offered, _) = read_notes_through(&app, &fake, &s.access).await;
    assert!(offered.iter().any(|t| t == "read_file"), "{offered:?}");
}
