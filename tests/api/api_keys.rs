//! Personal API keys: create (secret shown once, stored hashed), list, revoke; a key acts
//! as its owner only on the `/v1` API, dies with a disabled owner or at its expiry; admins
//! list and revoke anyone's; hostile inputs.

use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

use crate::openai_sdk::{app_on, new_key};
use agentchat_tests::fake_upstream::FakeUpstream;

pub async fn v1_models(app: &TestApp, bearer: &str) -> (u16, Value) {
    let r = app
        .client
        .get(app.url("/v1/models"))
        .bearer_auth(bearer)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[derive(diesel::QueryableByName)]
struct Stored {
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    secret_hash: Vec<u8>,
    #[diesel(sql_type = diesel::sql_types::Text)]
    row: String,
}

#[tokio::test]
async fn a_key_is_shown_once_stored_hashed_listed_and_revoked() {
    let fake = FakeUpstream::start().await;
    let (app, [alice]) = app_on(&fake).start_as(["alice"]).await;
    // Within the maximum lifetime (auth.api_key_max_days, 365 by default).
    let until = (chrono::Utc::now() + chrono::Duration::days(100))
        .format("%Y-%m-%dT00:00:00Z")
        .to_string();
    let r = app
        .post_as(&alice.access, "/api/keys")
        .json(&json!({"name": "  laptop  ", "expires_at": until}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let secret = created["key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("ack_") && secret.len() == 47, "{secret}");
    assert_eq!(created["name"], "laptop");
    assert_eq!(created["prefix"].as_str().unwrap(), &secret[..12]);
    assert_eq!(created["expires_at"], until.as_str());

    // Only the SHA-256 is stored; no column holds the secret.
    let mut db = app.db().await;
    let rows: Vec<Stored> =
        diesel::sql_query("SELECT secret_hash, api_keys::text AS row FROM api_keys")
            .load(&mut db)
            .await
            .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].secret_hash, agentchat::auth::api_key::hash(&secret));
    assert!(!rows[0].row.contains(&secret[12..]), "the secret is stored");

    // Listed without the secret; the use is recorded.
    let (status, models) = v1_models(&app, &secret).await;
    assert_eq!(status, 200, "{models}");
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "fake-model");
    let mut list = Value::Null;
    for _ in 0..50 {
        list = app
            .get_as(&alice.access, "/api/keys")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !list["items"][0]["last_used_at"].is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let item = &list["items"][0];
    assert_eq!(item["name"], "laptop");
    assert!(
        item.get("key").is_none() && !list.to_string().contains(&secret[12..]),
        "{list}"
    );
    assert!(!item["last_used_at"].is_null(), "{list}");

    // Revoked: refused at once, in OpenAI's error shape.
    let id = created["id"].as_str().unwrap();
    let r = app
        .delete_as(&alice.access, &format!("/api/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (status, body) = v1_models(&app, &secret).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "invalid_api_key", "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"].get("param").is_some(), "{body}");
    let r = app
        .delete_as(&alice.access, &format!("/api/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn a_key_opens_only_the_v1_api() {
    let fake = FakeUpstream::start().await;
    let (app, [admin]) = app_on(&fake).start_as(["root"]).await;
    let (_, key) = new_key(&app, &admin.access, "admin key").await;
    assert_eq!(v1_models(&app, &key).await.0, 200);
    for (method, path, body) in [
        ("GET", "/api/me", None),
        ("GET", "/api/conversations", None),
        ("GET", "/api/keys", None),
        ("POST", "/api/keys", Some(json!({"name": "minted"}))),
        ("GET", "/api/admin/users", None),
        ("GET", "/api/admin/keys", None),
        ("GET", "/api/files", None),
        (
            "POST",
            "/api/me/password",
            Some(json!({"current_password": "password-of-root", "new_password": "taken-over-1"})),
        ),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = app.client.request(m, app.url(path)).bearer_auth(&key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401, "{method} {path} took an API key");
    }
    let list: Value = app
        .get_as(&admin.access, "/api/keys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        1,
        "a key minted a key"
    );
}

#[tokio::test]
async fn a_key_dies_with_a_disabled_owner_and_at_its_expiry() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, bob]) = app_on(&fake).start_as(["root", "bob"]).await;
    let (id, key) = new_key(&app, &bob.access, "k").await;
    assert_eq!(v1_models(&app, &key).await.0, 200);

    let r = app
        .patch_as(&admin.access, &format!("/api/admin/users/{}", bob.user_id))
        .json(&json!({"disabled": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(v1_models(&app, &key).await.0, 401);
    let r = app
        .patch_as(&admin.access, &format!("/api/admin/users/{}", bob.user_id))
        .json(&json!({"disabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(v1_models(&app, &key).await.0, 200);

    let mut db = app.db().await;
    diesel::sql_query(format!(
        "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = '{id}'"
    ))
    .execute(&mut db)
    .await
    .unwrap();
    let (status, body) = v1_models(&app, &key).await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );
}

#[tokio::test]
async fn keys_are_private_and_admins_list_and_revoke_them() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, victim, thief]) = app_on(&fake).start_as(["root", "victim", "thief"]).await;
    let (id, key) = new_key(&app, &victim.access, "victim's").await;

    let mine: Value = app
        .get_as(&thief.access, "/api/keys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(mine["items"], json!([]));
    let r = app
        .delete_as(&thief.access, &format!("/api/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = app
        .get_as(&thief.access, "/api/admin/keys")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = app
        .delete_as(&thief.access, &format!("/api/admin/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(v1_models(&app, &key).await.0, 200);

    let all: Value = app
        .get_as(&admin.access, "/api/admin/keys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["username"], "victim");
    assert_eq!(items[0]["user_id"], victim.user_id.to_string());
    assert!(!all.to_string().contains(&key[12..]));
    let r = app
        .delete_as(&admin.access, &format!("/api/admin/keys/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(v1_models(&app, &key).await.0, 401);
}

#[tokio::test]
async fn hostile_key_requests_are_refused() {
    let fake = FakeUpstream::start().await;
    let (app, [user]) = app_on(&fake).start_as(["user"]).await;
    for body in [
        json!({"name": ""}),
        json!({"name": "   "}),
        json!({"name": "x".repeat(101)}),
        json!({"name": "k", "expires_at": "2001-01-01T00:00:00Z"}),
        json!({"name": "k", "expires_at": "tomorrow"}),
        json!({"name": "k", "user_id": uuid::Uuid::new_v4()}),
        json!({"name": "k", "key": "ack_chosen_by_the_caller"}),
        json!({}),
    ] {
        let r = app
            .post_as(&user.access, "/api/keys")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{body}");
    }
    for _ in 0..50 {
        new_key(&app, &user.access, "many").await;
    }
    let r = app
        .post_as(&user.access, "/api/keys")
        .json(&json!({"name": "one too many"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 409, "too_many_keys").await;
    // Forged, truncated, oversized and foreign bearers.
    for bearer in [
        "ack_".to_owned(),
        format!("ack_{}", "A".repeat(43)),
        format!("ack_{}", "A".repeat(10_000)),
        "sk-proj-not-ours".to_owned(),
    ] {
        let (status, body) = v1_models(&app, &bearer).await;
        assert_eq!(status, 401, "{bearer:.20}");
        assert_eq!(body["error"]["code"], "invalid_api_key");
    }
    let r = app.client.get(app.url("/v1/models")).send().await.unwrap();
    assert_eq!(r.status(), 401);
}
