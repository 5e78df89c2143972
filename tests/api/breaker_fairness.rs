//! Issue 41, observations: one member's failing calls (timeouts, 429s or 5xx their prompts
//! cause) must not open a provider's shared breaker for everyone: it opens only once the
//! calls of `llm.breaker_min_users` distinct users failed. And the unauthenticated
//! `/readyz` counts breakers by state without naming providers; only an admin sees names.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

/// `gpt` (OpenAI fake, falls back to `claude`) and `claude` (Anthropic fake); two failures
/// in a row would open a breaker, the default number of users must have failed.
fn catalogue(openai: &FakeUpstream, anthropic: &FakeUpstream) -> AppBuilder<'static> {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": openai.base_url_openai(), "api_key": "sk-oa", "max_retries": 0},
        {"name": "an", "kind": "anthropic", "base_url": anthropic.base_url_anthropic(), "api_key": "sk-an", "max_retries": 0},
    ]);
    let models = json!([
        {"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o", "fallbacks": ["claude"]},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5"},
    ]);
    TestApp::builder().settings(move |s| {
        s.providers = serde_json::from_value(providers).unwrap();
        s.models = serde_json::from_value(models).unwrap();
        s.llm.breaker_failures = 2;
        s.llm.breaker_min_calls = 1_000;
        s.llm.breaker_cooldown = Duration::from_secs(60);
    })
}

async fn readyz(app: &TestApp, token: Option<&str>) -> Value {
    let mut r = app.client.get(app.url("/readyz"));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

async fn turn(app: &TestApp, token: &str) {
    let conv = app.new_conversation(token).await;
    let events = app.chat(token, &conv, "hello").await;
    assert_eq!(streamed_text(&events), "from claude");
}

#[tokio::test]
async fn one_members_failures_alone_never_open_the_shared_breaker() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    openai.set_default(Some(Reply::error(503, "overloaded").scripted()));
    anthropic.set_default(Some(
        Reply::Text {
            text: "from claude".into(),
            usage: Some(Usage::new(30, 5)),
        }
        .scripted(),
    ));
    let (app, [admin, mallory, fern]) = catalogue(&openai, &anthropic)
        .start_as(["ada", "mallory", "fern"])
        .await;

    // Five of one member's calls fail in a row: the breaker stays closed, everyone's
    // calls still try gpt first.
    for _ in 0..5 {
        turn(&app, &mallory.access).await;
    }
    assert_eq!(openai.request_count(), 5);
    assert_eq!(
        readyz(&app, Some(&admin.access)).await["providers"]["oa"],
        "closed"
    );

    // Another member's call fails as well: the provider is unwell for more than one.
    turn(&app, &fern.access).await;
    assert_eq!(openai.request_count(), 6);
    assert_eq!(
        readyz(&app, Some(&admin.access)).await["providers"]["oa"],
        "open"
    );
    turn(&app, &mallory.access).await;
    assert_eq!(openai.request_count(), 6, "an open breaker sends nothing");
}

#[tokio::test]
async fn readyz_counts_breakers_and_names_providers_only_to_an_admin() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let (app, [admin, member]) = catalogue(&openai, &anthropic)
        .start_as(["ada", "uma"])
        .await;
    for token in [None, Some(member.access.as_str())] {
        let body = readyz(&app, token).await;
        assert_eq!(body["status"], "ready");
        assert_eq!(body["breakers"]["closed"], 2, "{body}");
        assert_eq!(body["breakers"]["open"], 0, "{body}");
        assert!(body.get("providers").is_none(), "{body}");
        let text = body.to_string();
        assert!(
            !text.contains("\"oa\"") && !text.contains("\"an\""),
            "{text}"
        );
    }
    let body = readyz(&app, Some(&admin.access)).await;
    assert_eq!(body["providers"], json!({"oa": "closed", "an": "closed"}));
}
