//! Issue 41, observations: provider keys added through the admin API are sealed at rest
//! (AES-256-GCM under `auth.secret_key`): the table never holds the key in clear, the key
//! still reaches the upstream, and `rotate` re-seals them under a new key.

use agentchat::catalogue::entry as catalogue_entry;
use agentchat::db::sealed::SealingKey;
use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use base64::Engine as _;
use diesel::sql_types::Text;
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use serde_json::json;

const KEY: &str = "sk-sealed-canary-0123456789";

fn secret(byte: u8) -> String {
    base64::engine::general_purpose::STANDARD.encode([byte; 32])
}

#[derive(QueryableByName)]
struct Spec {
    #[diesel(sql_type = Text)]
    spec: String,
}

async fn stored_specs(app: &TestApp) -> String {
    let mut db = app.db().await;
    let rows: Vec<Spec> = diesel::sql_query("SELECT spec::text AS spec FROM catalogue_entries")
        .load(&mut db)
        .await
        .unwrap();
    rows.into_iter()
        .map(|r| r.spec)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A server on `database` whose sealing key is `key` (`None`: unset).
async fn server(database: &str, key: Option<String>) -> TestApp {
    let mut settings = test_settings(database);
    settings.auth.secret_key = key.map(Into::into);
    TestApp::builder().exact_settings(settings).start().await
}

/// One turn on the added model `added`; returns the key the upstream was sent.
async fn key_sent(app: &TestApp, token: &str, fake: &FakeUpstream) -> String {
    fake.push(Reply::Text {
        text: "sealed and answering".into(),
        usage: Some(Usage::new(20, 4)),
    });
    let conv = app
        .create_conversation_with(token, json!({"model": "added"}))
        .await;
    let events = app.chat(token, &conv, "hi").await;
    assert_eq!(streamed_text(&events), "sealed and answering");
    let sent = fake.requests();
    sent.last().unwrap()["headers"]["authorization"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn add_provider(app: &TestApp, admin: &str, fake: &FakeUpstream) {
    let r = app
        .post_as(admin, "/api/admin/providers")
        .json(
            &json!({"name": "sealed", "kind": "openai", "base_url": fake.base_url_openai(),
                      "api_key": KEY, "max_retries": 0}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = app
        .post_as(admin, "/api/admin/models")
        .json(&json!({"name": "added", "provider": "sealed", "upstream_model": "gpt-4o"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn an_added_providers_key_is_sealed_at_rest_reaches_the_upstream_and_rotates() {
    let fake = FakeUpstream::start().await;
    let db = fresh_database_guard().await;
    let app = server(db.url(), Some(secret(1))).await;
    let admin = app.signed_up("root").await;
    add_provider(&app, &admin.access, &fake).await;

    let specs = stored_specs(&app).await;
    assert!(!specs.contains(KEY), "a key in clear: {specs}");
    assert!(specs.contains("api_key_sealed"), "{specs}");
    assert_eq!(
        key_sent(&app, &admin.access, &fake).await,
        format!("Bearer {KEY}")
    );

    // Rotation: the wrong old key changes nothing; the right one re-seals under the new key,
    // which a server started with it reads.
    let (old, new) = (
        SealingKey::from_base64(&secret(1)).unwrap(),
        SealingKey::from_base64(&secret(2)).unwrap(),
    );
    let wrong = SealingKey::from_base64(&secret(3)).unwrap();
    let mut conn = app.db().await;
    assert!(catalogue_entry::rotate(&mut conn, Some(&wrong), Some(&new))
        .await
        .is_err());
    assert_eq!(stored_specs(&app).await, specs);
    let n = catalogue_entry::rotate(&mut conn, Some(&old), Some(&new))
        .await
        .unwrap();
    assert_eq!(n, 1);
    let rotated = stored_specs(&app).await;
    assert!(!rotated.contains(KEY) && rotated != specs, "{rotated}");
    let renewed = server(db.url(), Some(secret(2))).await;
    assert_eq!(
        key_sent(&renewed, &admin.access, &fake).await,
        format!("Bearer {KEY}")
    );
}

#[tokio::test]
async fn without_a_sealing_key_keys_are_stored_as_before_and_sealed_by_a_rotation() {
    let fake = FakeUpstream::start().await;
    let db = fresh_database_guard().await;
    let app = server(db.url(), None).await;
    let admin = app.signed_up("root").await;
    add_provider(&app, &admin.access, &fake).await;
    assert!(stored_specs(&app).await.contains(KEY));
    assert_eq!(
        key_sent(&app, &admin.access, &fake).await,
        format!("Bearer {KEY}")
    );

    // Once a key is set, one rotation (no old key) seals what was stored in clear.
    let new = SealingKey::from_base64(&secret(4)).unwrap();
    let mut conn = app.db().await;
    assert_eq!(
        catalogue_entry::rotate(&mut conn, None, Some(&new))
            .await
            .unwrap(),
        1
    );
    assert!(!stored_specs(&app).await.contains(KEY));
}
