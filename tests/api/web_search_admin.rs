//! `/api/admin/search-providers` through the running server: the file's providers listed
//! read-only, the API's added, edited and removed; keys write-only (never in an answer or
//! the admin trail, sealed in the database under `auth.secret_key`), and a stored key is
//! what the provider receives.

use agentchat_tests::fake_search::{Answer, FakeSearch, Vendor};
use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;
use base64::Engine as _;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::web_search::{app_with_search, rust_results, search_turn};

async fn send(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut r = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    r.send().await.unwrap()
}

#[tokio::test]
async fn providers_are_managed_with_write_only_sealed_keys_and_every_change_in_the_trail() {
    let fake = FakeUpstream::start().await;
    let searx = FakeSearch::start(Vendor::Searxng, "", Answer::Results(rust_results())).await;
    let brave = FakeSearch::start(
        Vendor::Brave,
        "brave-canary-key",
        Answer::Results(rust_results()),
    )
    .await;
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let (app, [admin, member]) = app_with_search(&fake, json!([searx.entry("searx")]))
        .settings(move |s| s.auth.secret_key = Some(key.into()))
        .start_as(["boss", "worker"])
        .await;
    let post = reqwest::Method::POST;
    let put = reqwest::Method::PUT;
    let r = send(
        &app,
        &admin.access,
        post.clone(),
        "/api/admin/search-providers",
        Some(
            json!({"name": "brave", "kind": "brave", "base_url": brave.base_url(),
                    "api_key": "brave-canary-key", "price_per_query": "0.005", "timeout_secs": 5}),
        ),
    )
    .await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["api_key_set"], true);
    assert_eq!(created["source"], "api");
    assert_eq!(created["price_per_query"], "0.005");
    assert!(!created.to_string().contains("canary"), "{created}");
    // Listed after the file's, which is read-only here.
    let list: Value = send(
        &app,
        &admin.access,
        reqwest::Method::GET,
        "/api/admin/search-providers",
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["searx", "brave"]);
    assert_eq!(list["items"][0]["source"], "config");
    assert!(!list.to_string().contains("canary"));
    let r = send(
        &app,
        &admin.access,
        put.clone(),
        "/api/admin/search-providers/searx",
        Some(json!({"kind": "searxng", "base_url": "http://elsewhere.test"})),
    )
    .await;
    expect_error(r, 409, "configured_provider").await;
    let r = send(
        &app,
        &admin.access,
        reqwest::Method::DELETE,
        "/api/admin/search-providers/searx",
        None,
    )
    .await;
    expect_error(r, 409, "configured_provider").await;
    let r = send(
        &app,
        &admin.access,
        post.clone(),
        "/api/admin/search-providers",
        Some(json!({"name": "brave", "kind": "brave", "api_key": "x"})),
    )
    .await;
    expect_error(r, 409, "search_provider_exists").await;
    // Bad entries are refused with what is wrong.
    for bad in [
        json!({"name": "s2", "kind": "searxng"}),
        json!({"name": "b2", "kind": "brave"}),
        json!({"name": "Bad Name", "kind": "searxng", "base_url": "http://x.test"}),
        json!({"name": "s3", "kind": "searxng", "base_url": "ftp://x.test"}),
        json!({"name": "s4", "kind": "searxng", "base_url": "http://x.test", "timeout_secs": 0}),
    ] {
        let r = send(
            &app,
            &admin.access,
            post.clone(),
            "/api/admin/search-providers",
            Some(bad.clone()),
        )
        .await;
        expect_error(r, 400, "invalid_search_provider").await;
    }
    let r = send(&app, &admin.access, post.clone(), "/api/admin/search-providers",
        Some(json!({"name": "s5", "kind": "searxng", "base_url": "http://x.test", "price_per_query": "abc"}))).await;
    expect_error(r, 400, "invalid_price").await;
    let r = send(
        &app,
        &member.access,
        post.clone(),
        "/api/admin/search-providers",
        Some(json!({"name": "s6", "kind": "searxng", "base_url": "http://x.test"})),
    )
    .await;
    expect_error(r, 403, "forbidden").await;
    // The key is sealed in the database.
    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        api_key: Option<String>,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        api_key_sealed: Option<String>,
    }
    let mut db = app.db().await;
    let stored: Stored = diesel::sql_query(
        "SELECT api_key, api_key_sealed FROM search_providers WHERE name = 'brave'",
    )
    .get_result(&mut db)
    .await
    .unwrap();
    assert!(stored.api_key.is_none());
    let sealed = stored.api_key_sealed.unwrap();
    assert!(
        sealed.starts_with("v1:") && !sealed.contains("canary"),
        "{sealed}"
    );
    // An edit without the key keeps it (same origin) and the provider receives it.
    let r = send(
        &app,
        &admin.access,
        put.clone(),
        "/api/admin/search-providers/brave",
        Some(json!({"kind": "brave", "base_url": brave.base_url(), "price_per_query": "0.004"})),
    )
    .await;
    assert_eq!(r.status(), 200);
    let edited: Value = r.json().await.unwrap();
    assert_eq!(
        (
            edited["api_key_set"].clone(),
            edited["price_per_query"].clone()
        ),
        (json!(true), json!("0.004"))
    );
    let r = send(
        &app,
        &admin.access,
        put.clone(),
        "/api/admin/search-providers/brave",
        Some(json!({"kind": "brave", "base_url": "http://another-origin.test"})),
    )
    .await;
    expect_error(r, 422, "api_key_required").await;
    let r = send(
        &app,
        &admin.access,
        reqwest::Method::PUT,
        "/api/admin/roles/member/search",
        Some(json!({"providers": ["brave"]})),
    )
    .await;
    assert_eq!(r.status(), 200);
    let conv = app.new_conversation(&member.access).await;
    let res = search_turn(
        &app,
        &fake,
        &member.access,
        &conv,
        "web_search",
        json!({"query": "rust"}),
        "ok",
    )
    .await;
    assert_eq!(res["success"], true, "{res}");
    assert_eq!(
        brave.requests()[0].header("x-subscription-token"),
        Some("brave-canary-key")
    );
    // Deleted; the trail has every change and never the key.
    let r = send(
        &app,
        &admin.access,
        reqwest::Method::DELETE,
        "/api/admin/search-providers/brave",
        None,
    )
    .await;
    assert_eq!(r.status(), 204);
    let r = send(
        &app,
        &admin.access,
        reqwest::Method::GET,
        "/api/admin/search-providers/brave",
        None,
    )
    .await;
    expect_error(r, 404, "not_found").await;
    let changes: Value = send(
        &app,
        &admin.access,
        reqwest::Method::GET,
        "/api/admin/changes",
        None,
    )
    .await
    .json()
    .await
    .unwrap();
    let kinds: Vec<&str> = changes["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .filter(|k| k.starts_with("search_provider."))
        .collect();
    for k in [
        "search_provider.create",
        "search_provider.update",
        "search_provider.delete",
    ] {
        assert!(kinds.contains(&k), "{k} missing: {kinds:?}");
    }
    assert!(
        !changes.to_string().contains("canary"),
        "a key in the trail"
    );
}
