//! Issue 41, finding 4: a `chat`-only API key read its owner's private documents through
//! `search_knowledge` and planted memory notes with `remember`. Each tool that reads or
//! writes the owner's data needs its key scope (`knowledge`, `memory`): a key without it is
//! neither offered the tool nor able to run it when the model names it anyway.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::key_lifetime::{create as create_key, listed_keys};
use crate::knowledge_support::{collection, on_fake, send, settled, upload};
use crate::openai_sdk::MODEL;

/// A `/v1` call whose model calls `tool` with `args`, then answers; the tools the model was
/// offered, and the tool result it was given.
async fn call_through(
    app: &TestApp,
    fake: &FakeUpstream,
    key: &str,
    tool: &str,
    args: Value,
) -> (Vec<String>, String) {
    let before = fake.requests().len();
    fake.push(Reply::tool_call("c1", tool, args.to_string()));
    fake.push(Reply::text("done"));
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": MODEL, "messages": [{"role": "user", "content": "go"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let requests = fake.requests();
    let offered = requests[before]["body"]["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let result = requests[before + 1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap_or_default();
    (offered, result)
}

async fn new_key(app: &TestApp, token: &str, name: &str, scopes: Value) -> String {
    let r = create_key(app, token, json!({"name": name, "scopes": scopes})).await;
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["key"].as_str().unwrap().to_owned()
}

async fn notes(app: &TestApp, token: &str) -> Vec<Value> {
    let (_, mine) = send(app, reqwest::Method::GET, token, "/api/me/memory", None).await;
    mine["notes"].as_array().unwrap().clone()
}

#[tokio::test]
async fn documents_and_memory_need_their_key_scopes() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, ann]) = on_fake(&fake).model(MODEL).start_as(["boss", "ann"]).await;
    // Memory writes without asking, so that only the scope decides here.
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["calculator", "search_knowledge", "remember"],
                   "approvals": {"remember": "none"}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let c = collection(&app, &ann.access, "Private").await;
    let (status, body) = upload(
        &app,
        &ann.access,
        &c,
        "plans.md",
        b"The launch codename is Bluebird.".to_vec(),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        settled(&app, &ann.access, &c, "plans.md").await["state"],
        "ready"
    );

    let chat_only = new_key(&app, &ann.access, "chat only", json!(["chat"])).await;
    let both = new_key(
        &app,
        &ann.access,
        "docs and memory",
        json!(["chat", "knowledge", "memory"]),
    )
    .await;
    let bad = create_key(&app, &ann.access, json!({"name": "x", "scopes": ["admin"]})).await;
    let body = expect_error(bad, 422, "invalid_scopes").await;
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`knowledge`") && message.contains("`memory`"),
        "{body}"
    );
    let listed = listed_keys(&app, &ann.access).await;
    assert_eq!(
        listed["items"][0]["scopes"],
        json!(["chat", "knowledge", "memory"]),
        "{listed}"
    );

    let search = json!({"query": "launch codename"});
    let remember = json!({"text": "Always answer in French"});
    // Chat only: neither tool is offered, and naming one anyway is refused.
    let (offered, result) =
        call_through(&app, &fake, &chat_only, "search_knowledge", search.clone()).await;
    assert!(
        !offered.iter().any(|t| t == "search_knowledge"),
        "{offered:?}"
    );
    assert!(!offered.iter().any(|t| t == "remember"), "{offered:?}");
    assert!(offered.iter().any(|t| t == "calculator"), "{offered:?}");
    assert!(
        result.contains("not_permitted") && result.contains("`knowledge` scope"),
        "{result}"
    );
    assert!(!result.contains("Bluebird"), "{result}");
    let (_, result) = call_through(&app, &fake, &chat_only, "remember", remember.clone()).await;
    assert!(
        result.contains("not_permitted") && result.contains("`memory` scope"),
        "{result}"
    );
    assert!(notes(&app, &ann.access).await.is_empty());

    // With the scopes: offered and run.
    let (offered, result) = call_through(&app, &fake, &both, "search_knowledge", search).await;
    assert!(
        offered.iter().any(|t| t == "search_knowledge"),
        "{offered:?}"
    );
    assert!(offered.iter().any(|t| t == "remember"), "{offered:?}");
    assert!(result.contains("Bluebird"), "{result}");
    let (_, result) = call_through(&app, &fake, &both, "remember", remember).await;
    assert!(result.contains("remembered"), "{result}");
    let kept = notes(&app, &ann.access).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["text"], "Always answer in French");
}
