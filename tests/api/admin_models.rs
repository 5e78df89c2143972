//! `GET /api/admin/models`: the catalogue as an admin reviews it. Two providers (one with a
//! key, one without), a priced and an unpriced model; the keys never appear, the roles that
//! may use each model follow `PUT /api/admin/roles`, and members are refused.

use agentchat_tests::*;
use serde_json::{json, Value};

const KEY: &str = "sk-canary-admin-models-0123456789";
const URL_PASSWORD: &str = "url-password-canary";

fn catalogue(s: &mut agentchat::config::Settings) {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": format!("http://proxy:{URL_PASSWORD}@127.0.0.1:9/v1/"), "api_key": KEY},
        {"name": "an", "kind": "anthropic"},
    ]);
    let models = json!([
        {"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o-2024-08-06", "context_window": 8000, "max_output": 300,
         "prices": [
            {"currency": "USD", "input": "2.50", "output": "10", "cache_read": "1.25"},
            {"currency": "USD", "input": "2.00", "output": "8", "effective_from": "2020-01-01T00:00:00Z"},
            {"currency": "USD", "input": "9", "output": "99", "effective_from": "2999-01-01T00:00:00Z"},
         ],
         "fallbacks": ["claude"]},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5"},
    ]);
    s.providers = serde_json::from_value(providers).unwrap();
    s.models = serde_json::from_value(models).unwrap();
}

async fn admin_models(app: &TestApp, token: &str) -> (u16, String) {
    let r = app.get_as(token, "/api/admin/models").send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

fn model<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no model {name} in {body}"))
}

#[tokio::test]
async fn admins_see_providers_models_prices_and_roles_without_the_keys() {
    let (app, [admin, member]) = TestApp::builder()
        .settings(catalogue)
        .role("auditor", json!({"tools": [], "models": ["gpt"]}))
        .start_as(["root", "mia"])
        .await;

    let (status, text) = admin_models(&app, &admin.access).await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains(KEY), "the API key leaked: {text}");
    assert!(
        !text.contains(URL_PASSWORD),
        "the URL's password leaked: {text}"
    );
    assert!(!text.contains("api_key\""), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();

    let shown: Vec<Value> = body["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            json!({"name": p["name"], "kind": p["kind"], "base_url": p["base_url"],
                   "api_key_set": p["api_key_set"], "source": p["source"],
                   "breaker": p["breaker"]["state"], "max_retries": p["max_retries"]})
        })
        .collect();
    assert_eq!(
        shown,
        [
            json!({"name": "oa", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_set": true,
                   "source": "config", "breaker": "closed", "max_retries": null}),
            json!({"name": "an", "kind": "anthropic", "base_url": "https://api.anthropic.com", "api_key_set": false,
                   "source": "config", "breaker": "closed", "max_retries": null}),
        ]
    );
    let names: Vec<_> = body["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("gpt"), json!("claude")]);

    let gpt = model(&body, "gpt");
    assert_eq!(gpt["provider"], "oa");
    assert_eq!(gpt["kind"], "openai");
    assert_eq!(gpt["upstream_model"], "gpt-4o-2024-08-06");
    assert_eq!(gpt["context_window"], 8000);
    assert_eq!(gpt["max_output"], 300);
    assert_eq!(gpt["unpriced"], false);
    assert_eq!(gpt["fallbacks"], json!(["claude"]));
    // Every row, oldest first (no start = always, so first), as exact decimal strings.
    let prices = gpt["prices"].as_array().unwrap();
    assert_eq!(prices.len(), 3, "{gpt}");
    assert_eq!(prices[0]["effective_from"], Value::Null);
    assert_eq!(
        (
            &prices[0]["input"],
            &prices[0]["cache_read"],
            &prices[0]["cache_write"]
        ),
        (&json!("2.5"), &json!("1.25"), &json!("2.5"))
    );
    assert_eq!(prices[1]["input"], "2");
    assert!(prices[1]["effective_from"]
        .as_str()
        .unwrap()
        .starts_with("2020-01-01"));
    assert!(prices[2]["effective_from"]
        .as_str()
        .unwrap()
        .starts_with("2999-01-01"));
    // In force: the latest that has started (2020's), not the future one.
    assert_eq!(
        gpt["price_in_force"],
        json!({"currency": "USD", "input": "2", "output": "8", "cache_read": "2", "cache_write": "2"})
    );
    assert_eq!(gpt["roles"], json!(["admin", "auditor", "member"]));

    let claude = model(&body, "claude");
    assert_eq!(claude["unpriced"], true);
    assert_eq!(claude["prices"], json!([]));
    assert_eq!(claude["price_in_force"], Value::Null);
    assert_eq!(claude["roles"], json!(["admin", "member"]));

    // Taking a model away from a role shows at once.
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "models": ["gpt"]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let (_, text) = admin_models(&app, &admin.access).await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(model(&body, "claude")["roles"], json!(["admin"]));
    assert_eq!(
        model(&body, "gpt")["roles"],
        json!(["admin", "auditor", "member"])
    );

    // Members may not read it.
    let r = app
        .get_as(&member.access, "/api/admin/models")
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
    let r = app
        .client
        .get(app.url("/api/admin/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn the_single_llm_provider_is_a_one_entry_catalogue() {
    let (app, [admin]) = TestApp::builder()
        .models(&["demo", "demo-large"])
        .start_as(["root"])
        .await;
    let (status, text) = admin_models(&app, &admin.access).await;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["providers"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["providers"][0]["name"], "default");
    let gone = model(&body, "demo-large");
    assert_eq!(gone["provider"], "default");
    assert_eq!(gone["unpriced"], true);
    assert_eq!(gone["roles"], json!(["admin", "member"]));
}
