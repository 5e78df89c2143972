//! The model catalogue edited at run time (issue 30): an admin adds a provider (its key
//! write-only) and a model on it through the API; the model answers at once on this process
//! and on another one, under its upstream id with the stored key; every change is in the
//! admin trail without the key; the configuration's entries cannot be changed here; bad
//! entries get a clear 4xx.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

const KEY: &str = "sk-runtime-canary-0123456789";

/// One configured provider and model (read-only through the API).
fn configured(fake: &FakeUpstream) -> impl Fn(&mut agentchat::config::Settings) + Clone {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(), "max_retries": 0},
    ]);
    let models = json!([{"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o"}]);
    move |s| {
        s.providers = serde_json::from_value(providers.clone()).unwrap();
        s.models = serde_json::from_value(models.clone()).unwrap();
    }
}

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    token: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Sends the request and expects it refused with `status` and error `code`.
async fn refused(
    app: &TestApp,
    method: reqwest::Method,
    token: &str,
    path: &str,
    body: Option<Value>,
    status: u16,
    code: &str,
) {
    let (got, answer) = send(app, method, token, path, body).await;
    assert_eq!(
        (got, answer["error"]["code"].as_str()),
        (status, Some(code)),
        "{answer}"
    );
}

async fn model_names(app: &TestApp, token: &str) -> Vec<String> {
    let (_, models) = send(app, reqwest::Method::GET, token, "/api/models", None).await;
    serde_json::from_value(models["models"].clone()).unwrap()
}

#[tokio::test]
async fn an_admin_adds_a_provider_and_a_model_that_every_process_serves_at_once() {
    let (configured_fake, added) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let setup = configured(&configured_fake);
    let app = TestApp::builder().settings(setup.clone()).start().await;
    let mut other_settings = test_settings(&app.database_url);
    setup(&mut other_settings);
    let other = TestApp::builder()
        .exact_settings(other_settings)
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("uma").await;
    use reqwest::Method as M;

    // A provider with a key; the answer says only that a key is set.
    let (status, provider) = send(&app, M::POST, &admin.access, "/api/admin/providers", Some(json!({
        "name": "anth", "kind": "anthropic", "base_url": added.base_url_anthropic(), "api_key": KEY, "max_retries": 0,
    }))).await;
    assert_eq!(status, 201, "{provider}");
    assert_eq!(provider["api_key_set"], true);
    assert_eq!(provider["source"], "api");
    assert!(!provider.to_string().contains(KEY));

    // A priced model on it, with the configured one as its fallback.
    let (status, model) = send(&app, M::POST, &admin.access, "/api/admin/models", Some(json!({
        "name": "claude", "provider": "anth", "upstream_model": "claude-sonnet-4-5", "context_window": 200000,
        "max_output": 800, "prices": [{"currency": "USD", "input": "3", "output": "15", "cache_read": "0.3"}],
        "fallbacks": ["gpt"],
    }))).await;
    assert_eq!(status, 201, "{model}");
    assert_eq!(model["source"], "api");
    assert_eq!(model["price_in_force"]["cache_read"], "0.3");
    // Members have `*`: they may use it at once, here and on the other process.
    assert_eq!(model_names(&app, &user.access).await, ["gpt", "claude"]);
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = model_names(&other, &user.access).await;
        if seen.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen,
        ["gpt", "claude"],
        "the other process never saw the new model"
    );

    // A turn on the other process goes to the added provider with the stored key.
    added.push(Reply::Text {
        text: "added and answering".into(),
        usage: Some(Usage::new(20, 4)),
    });
    let conv = other
        .create_conversation_with(&user.access, json!({"model": "claude"}))
        .await;
    let events = other.chat(&user.access, &conv, "hi").await;
    assert_eq!(streamed_text(&events), "added and answering");
    let sent = added.requests();
    assert_eq!(sent[0]["body"]["model"], "claude-sonnet-4-5");
    assert_eq!(sent[0]["headers"]["x-api-key"], KEY);

    // An edit without the key keeps it; moving to another origin without it is refused.
    let edit =
        json!({"kind": "anthropic", "base_url": added.base_url_anthropic(), "max_retries": 1});
    let (status, body) = send(
        &app,
        M::PUT,
        &admin.access,
        "/api/admin/providers/anth",
        Some(edit),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["api_key_set"], true);
    assert_eq!(body["max_retries"], 1);
    let moved = json!({"kind": "anthropic", "base_url": "http://127.0.0.1:9"});
    refused(
        &app,
        M::PUT,
        &admin.access,
        "/api/admin/providers/anth",
        Some(moved),
        422,
        "api_key_required",
    )
    .await;
    // Another kind at the same address would send the key to another vendor's API: it must
    // be sent again too.
    let switched = json!({"kind": "openai", "base_url": added.base_url_anthropic()});
    refused(
        &app,
        M::PUT,
        &admin.access,
        "/api/admin/providers/anth",
        Some(switched),
        422,
        "api_key_required",
    )
    .await;

    // The model's price changes; a provider in use cannot go; a model that is another's
    // fallback cannot go; the configuration's entries are not the API's to change.
    let repriced = json!({"name": "claude", "provider": "anth", "upstream_model": "claude-sonnet-4-5",
        "prices": [{"currency": "USD", "input": "2", "output": "10"}]});
    let (status, body) = send(
        &app,
        M::PUT,
        &admin.access,
        "/api/admin/models/claude",
        Some(repriced),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["price_in_force"]["input"], "2");
    refused(
        &app,
        M::DELETE,
        &admin.access,
        "/api/admin/providers/anth",
        None,
        409,
        "provider_in_use",
    )
    .await;
    refused(
        &app,
        M::DELETE,
        &admin.access,
        "/api/admin/models/gpt",
        None,
        409,
        "configured_model",
    )
    .await;
    refused(
        &app,
        M::PUT,
        &admin.access,
        "/api/admin/providers/oa",
        Some(json!({"kind": "openai"})),
        409,
        "configured_provider",
    )
    .await;

    // Bad entries: a float price, an unknown provider or fallback, a duplicate, a member.
    for (body, code) in [
        (
            json!({"name": "x", "provider": "anth", "prices": [{"input": 0.1, "output": "1"}]}),
            "invalid_json",
        ),
        (json!({"name": "x", "provider": "nowhere"}), "invalid_model"),
        (
            json!({"name": "x", "provider": "anth", "fallbacks": ["ghost"]}),
            "invalid_model",
        ),
        (json!({"name": "gpt", "provider": "anth"}), "model_exists"),
        (
            json!({"name": "bad name!", "provider": "anth"}),
            "invalid_model",
        ),
        (
            json!({"name": "x", "provider": "anth", "prices": [{"input": "1", "output": "0.0000000001"}]}),
            "invalid_model",
        ),
    ] {
        let (status, answer) = send(
            &app,
            M::POST,
            &admin.access,
            "/api/admin/models",
            Some(body.clone()),
        )
        .await;
        assert!((400..500).contains(&status), "{body} -> {status} {answer}");
        assert_eq!(answer["error"]["code"], code, "{body} -> {answer}");
    }
    let (status, _) = send(
        &app,
        M::POST,
        &user.access,
        "/api/admin/models",
        Some(json!({"name": "y", "provider": "anth"})),
    )
    .await;
    assert_eq!(status, 403);
    refused(
        &app,
        M::POST,
        &admin.access,
        "/api/admin/providers",
        Some(json!({"name": "ftp", "kind": "openai", "base_url": "ftp://example.com"})),
        400,
        "invalid_provider",
    )
    .await;

    // Removed: the model, then its provider; both processes stop offering it.
    let (status, _) = send(
        &app,
        M::DELETE,
        &admin.access,
        "/api/admin/models/claude",
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = send(
        &app,
        M::DELETE,
        &admin.access,
        "/api/admin/providers/anth",
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(model_names(&app, &user.access).await, ["gpt"]);
    for _ in 0..100 {
        if model_names(&other, &user.access).await.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(model_names(&other, &user.access).await, ["gpt"]);

    // The admin trail has every change, never the key.
    let (status, trail) = send(
        &app,
        M::GET,
        &admin.access,
        "/api/admin/changes?limit=50",
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(!trail.to_string().contains(KEY), "the key is in the trail");
    let mut kinds: Vec<String> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap().to_owned())
        .filter(|k| k.starts_with("provider.") || k.starts_with("model."))
        .collect();
    kinds.reverse();
    assert_eq!(
        kinds,
        [
            "provider.create",
            "model.create",
            "provider.update",
            "model.update",
            "model.delete",
            "provider.delete"
        ]
    );

    // A restart keeps what the API added (stored, not only in memory).
    let (status, _) = send(&app, M::POST, &admin.access, "/api/admin/providers",
        Some(json!({"name": "vllm", "kind": "openai", "base_url": configured_fake.base_url_openai()}))).await;
    assert_eq!(status, 201);
    let (status, _) = send(
        &app,
        M::POST,
        &admin.access,
        "/api/admin/models",
        Some(json!({"name": "llama", "provider": "vllm"})),
    )
    .await;
    assert_eq!(status, 201);
    let mut fresh_settings = test_settings(&app.database_url);
    setup(&mut fresh_settings);
    let fresh = TestApp::builder()
        .exact_settings(fresh_settings)
        .start()
        .await;
    assert_eq!(model_names(&fresh, &user.access).await, ["gpt", "llama"]);
}
