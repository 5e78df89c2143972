//! Issue 42 item 5 (and 41.9, 42.11): the start banner of a server built with a configured
//! catalogue names its default model and the providers in use (never the demo model, never
//! a password in a `base_url`), says knowledge is off without pgvector, and names the file
//! store.

use agentchat::banner;
use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use serde_json::json;

#[tokio::test]
async fn the_banner_names_the_configured_default_and_its_providers_without_passwords() {
    let fake = FakeUpstream::start().await;
    let db = fresh_database_guard().await;
    let mut settings = test_settings(db.url());
    let with_password = fake
        .base_url_openai()
        .replacen("http://", "http://bob:hunter2-canary@", 1);
    settings.providers = serde_json::from_value(json!([
        {"name": "oa", "kind": "openai", "base_url": with_password, "api_key": "sk-oa"},
        {"name": "unused", "kind": "anthropic", "api_key": "sk-an"},
    ]))
    .unwrap();
    settings.models = serde_json::from_value(json!([
        {"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o"},
        {"name": "mini", "provider": "oa", "upstream_model": "gpt-4o-mini"},
    ]))
    .unwrap();
    let workspace = settings.tools.workspace_dir.clone();
    let app = agentchat::startup::Application::build(settings)
        .await
        .unwrap();
    let facts = app.start_facts(Some(false), Vec::new(), "agentchat".into());
    let text = banner::render(&app.state().settings, &facts, false);
    let _ = std::fs::remove_dir_all(&workspace);

    assert!(
        text.contains("Model         gpt (the default) via oa"),
        "{text}"
    );
    assert!(!text.contains("demo"), "{text}");
    let host = fake.base_url_openai().replacen("http://", "", 1);
    assert!(
        text.contains(&format!("oa (OpenAI-compatible, http://{host}): gpt, mini")),
        "{text}"
    );
    // A provider no model uses is not in use.
    assert!(!text.contains("unused"), "{text}");
    assert!(
        !text.contains("hunter2-canary") && !text.contains("bob"),
        "{text}"
    );
    // The test cluster has no pgvector.
    assert!(text.contains("Knowledge     off (no pgvector)"), "{text}");
    assert!(
        text.contains(&format!("Files         {}", workspace.display())),
        "{text}"
    );
}
