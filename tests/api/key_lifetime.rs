//! Finding 11 of the third review (issue 29): a stolen 15-minute access token could mint a
//! key that never expired and outlived a password change and an admin's reset. Now every
//! key expires (default and maximum lifetime are settings), making one needs a recent
//! sign-in or the password again, a password change revokes the keys unless asked not to,
//! and an admin's reset always does.

use std::time::Duration;

use agentchat_tests::*;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::api_keys::v1_models;

/// `POST /api/keys` with `body`.
pub async fn create(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.post_as(token, "/api/keys")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// `GET /api/keys`.
pub async fn listed_keys(app: &TestApp, token: &str) -> Value {
    app.get_as(token, "/api/keys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn created_key(app: &TestApp, token: &str, name: &str) -> String {
    let r = create(app, token, json!({"name": name})).await;
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["key"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn keys_expire_by_default_and_never_past_the_maximum() {
    let (app, [s]) = TestApp::builder()
        .settings(|s| {
            s.auth.api_key_default_days = 30;
            s.auth.api_key_max_days = 60;
        })
        .start_as(["keeper"])
        .await;
    let r = create(&app, &s.access, json!({"name": "default"})).await;
    assert_eq!(r.status(), 201);
    let made: Value = r.json().await.unwrap();
    let expires: DateTime<Utc> = made["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires - Utc::now()).num_hours() as f64 / 24.0;
    assert!((29.9..=30.0).contains(&days), "{made}");

    let too_late = Utc::now() + chrono::Duration::days(61);
    let r = create(
        &app,
        &s.access,
        json!({"name": "forever", "expires_at": too_late.to_rfc3339()}),
    )
    .await;
    let body = expect_error(r, 400, "invalid_expires_at").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("60 days"),
        "{body}"
    );
    let ok = Utc::now() + chrono::Duration::days(59);
    let r = create(
        &app,
        &s.access,
        json!({"name": "two months", "expires_at": ok.to_rfc3339()}),
    )
    .await;
    assert_eq!(r.status(), 201);

    let list = listed_keys(&app, &s.access).await;
    assert_eq!(
        list["policy"],
        json!({"default_days": 30, "max_days": 60, "reauth_secs": 300})
    );
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["expires_at"].is_string()));
}

#[tokio::test]
async fn an_old_sign_in_needs_the_password_again_to_make_a_key() {
    let (app, [s]) = TestApp::builder()
        .settings(|s| s.auth.reauth_secs = 1)
        .start_as(["sleeper"])
        .await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = create(&app, &s.access, json!({"name": "stolen"})).await;
    let body = expect_error(r, 403, "reauth_required").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("password"),
        "{body}"
    );
    // A refreshed token keeps its session's sign-in time.
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": s.refresh}))
        .await;
    assert_eq!(r.status(), 200);
    let fresh: Value = r.json().await.unwrap();
    let refreshed = fresh["access_token"].as_str().unwrap();
    let r = create(&app, refreshed, json!({"name": "stolen"})).await;
    expect_error(r, 403, "reauth_required").await;

    let r = create(
        &app,
        refreshed,
        json!({"name": "stolen", "password": "not-the-password"}),
    )
    .await;
    expect_error(r, 403, "wrong_password").await;
    let r = create(
        &app,
        refreshed,
        json!({"name": "mine", "password": "password-of-sleeper"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    // A new sign-in is recent again.
    let again = app.session_for("sleeper", "password-of-sleeper").await;
    let r = create(&app, &again.access, json!({"name": "after sign-in"})).await;
    assert_eq!(r.status(), 201);
}

#[tokio::test]
async fn a_password_change_revokes_keys_unless_asked_not_to_and_a_reset_always_does() {
    let (app, [admin, s]) = TestApp::builder().start_as(["boss", "owner"]).await;
    let first = created_key(&app, &s.access, "laptop").await;
    assert_eq!(v1_models(&app, &first).await.0, 200);
    let change = |current: &str, new: &str, revoke: Option<bool>| {
        let mut body = json!({"current_password": current, "new_password": new});
        if let Some(r) = revoke {
            body["revoke_api_keys"] = json!(r);
        }
        app.post_as(&s.access, "/api/me/password")
            .json(&body)
            .send()
    };
    let r = change("password-of-owner", "second-password-1", None)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let pair: Value = r.json().await.unwrap();
    let access = pair["access_token"].as_str().unwrap().to_owned();
    assert_eq!(
        v1_models(&app, &first).await.0,
        401,
        "the key outlived the change"
    );

    let second = created_key(&app, &access, "desktop").await;
    let r = app
        .post_as(&access, "/api/me/password")
        .json(&json!({"current_password": "second-password-1",
                      "new_password": "third-password-1", "revoke_api_keys": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(v1_models(&app, &second).await.0, 200, "kept as asked");

    let r = app
        .post_as(
            &admin.access,
            &format!("/api/admin/users/{}/password", s.user_id),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        v1_models(&app, &second).await.0,
        401,
        "the key outlived the reset"
    );
    let changes: Value = app
        .get_as(&admin.access, "/api/admin/changes?kind=user.password_reset")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        changes["items"][0]["after"]["api_keys_revoked"], 1,
        "{changes}"
    );
}

/// Keys made before every key had to expire get the default lifetime from the upgrade on
/// (migration `2026-12-04-000040_keys_expire`), rather than living forever.
#[tokio::test]
async fn keys_made_before_expiry_was_required_get_the_default_lifetime() {
    let (app, [s]) = TestApp::builder().start_as(["veteran"]).await;
    let _ = created_key(&app, &s.access, "from last year").await;
    // As such a key was stored before, and the migration not applied yet.
    let mut db = app.db().await;
    use diesel_async::RunQueryDsl;
    diesel::sql_query("UPDATE api_keys SET expires_at = NULL")
        .execute(&mut db)
        .await
        .unwrap();
    diesel::sql_query(
        "DELETE FROM __diesel_schema_migrations \
         WHERE version = '20261204000040'",
    )
    .execute(&mut db)
    .await
    .unwrap();
    // The next server start applies it.
    let upgraded = TestApp::builder().database(&app.database_url).start().await;
    let list = listed_keys(&upgraded, &s.access).await;
    let expires: DateTime<Utc> = list["items"][0]["expires_at"]
        .as_str()
        .unwrap_or_else(|| panic!("still no expiry: {list}"))
        .parse()
        .unwrap();
    let days = (expires - Utc::now()).num_hours() as f64 / 24.0;
    assert!((89.9..=90.0).contains(&days), "{list}");
}
