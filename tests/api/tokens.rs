use std::time::Duration;

use agentchat_tests::*;
use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

const SECRET: &str = "test-secret-that-is-long-enough-0123456789";

async fn me_status(app: &TestApp, token: &str) -> u16 {
    app.get_as(token, "/api/me")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn missing_and_garbage_tokens_are_401() {
    let app = TestApp::builder().start().await;
    let r = app.client.get(app.url("/api/me")).send().await.unwrap();
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    expect_error(r, 401, "unauthenticated").await;
    assert_eq!(me_status(&app, "not.a.jwt").await, 401);
}

#[tokio::test]
async fn tampered_token_is_401() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("kate").await;
    let mut parts: Vec<String> = s.access.split('.').map(str::to_owned).collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: Value = serde_json::from_slice(&b64.decode(&parts[1]).unwrap()).unwrap();
    claims["sub"] = json!(uuid::Uuid::new_v4());
    parts[1] = b64.encode(claims.to_string());
    assert_eq!(me_status(&app, &parts.join(".")).await, 401);
    assert_eq!(me_status(&app, &s.access).await, 200);
}

#[tokio::test]
async fn alg_none_token_is_401() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("liam").await;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = s.access.split('.').nth(1).unwrap().to_owned();
    let header = b64.encode(r#"{"alg":"none","typ":"JWT"}"#);
    assert_eq!(me_status(&app, &format!("{header}.{payload}.")).await, 401);
}

#[tokio::test]
async fn expired_token_is_401_and_wrong_key_too() {
    let app = TestApp::builder()
        .settings(|s| s.auth.jwt_secret = Some(SECRET.to_owned().into()))
        .start()
        .await;
    let s = app.signed_up("mia").await;
    let now = chrono::Utc::now().timestamp();
    let sign = |secret: &str, exp: i64| {
        encode(
            &Header::default(),
            &json!({"sub": s.user_id, "ver": 0, "iss": "agentchat", "iat": now - 100, "exp": exp}),
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    assert_eq!(me_status(&app, &sign(SECRET, now + 60)).await, 200);
    assert_eq!(me_status(&app, &sign(SECRET, now - 1)).await, 401);
    assert_eq!(
        me_status(
            &app,
            &sign("another-secret-that-is-long-enough-xx", now + 60)
        )
        .await,
        401
    );
}

#[tokio::test]
async fn access_tokens_expire_for_real() {
    let app = TestApp::builder()
        .settings(|s| s.auth.access_token_ttl = Duration::from_secs(1))
        .start()
        .await;
    let s = app.signed_up("nina").await;
    assert_eq!(me_status(&app, &s.access).await, 200);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(me_status(&app, &s.access).await, 401);
}

#[tokio::test]
async fn refresh_rotates_and_reuse_revokes_the_family() {
    // No grace window: any second presentation is a reuse.
    let app = TestApp::builder()
        .settings(|s| s.security.refresh_reuse_grace = std::time::Duration::ZERO)
        .start()
        .await;
    let s = app.signed_up("omar").await;
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": s.refresh}))
        .await;
    assert_eq!(r.status(), 200);
    let next: Value = r.json().await.unwrap();
    let next_refresh = next["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(next_refresh, s.refresh);
    assert_eq!(
        me_status(&app, next["access_token"].as_str().unwrap()).await,
        200
    );
    // Reusing the spent token fails and kills its successor too.
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": s.refresh}))
        .await;
    expect_error(r, 401, "unauthenticated").await;
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": next_refresh}))
        .await;
    expect_error(r, 401, "unauthenticated").await;
    // Another login is a separate family and still works.
    let other = app.session_for("omar", "password-of-omar").await;
    let r = app
        .post_json(
            "/api/auth/refresh",
            &json!({"refresh_token": other.refresh}),
        )
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn garbage_refresh_token_is_401() {
    let app = TestApp::builder().start().await;
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": "nope"}))
        .await;
    expect_error(r, 401, "unauthenticated").await;
}

#[tokio::test]
async fn logout_kills_the_refresh_token() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("pia").await;
    let r = app
        .post_json("/api/auth/logout", &json!({"refresh_token": s.refresh}))
        .await;
    assert_eq!(r.status(), 204);
    let r = app
        .post_json("/api/auth/refresh", &json!({"refresh_token": s.refresh}))
        .await;
    expect_error(r, 401, "unauthenticated").await;
    // Logging out twice is harmless.
    let r = app
        .post_json("/api/auth/logout", &json!({"refresh_token": s.refresh}))
        .await;
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn generated_secret_is_shared_by_replicas_and_restarts() {
    let first = TestApp::builder().start().await;
    let s = first.signed_up("quinn").await;
    let second = TestApp::builder()
        .database(&first.database_url)
        .start()
        .await;
    assert_eq!(me_status(&second, &s.access).await, 200);
}

#[tokio::test]
async fn short_configured_secret_is_refused_at_startup() {
    let db = fresh_database_guard().await;
    let mut settings = test_settings(db.url());
    settings.auth.jwt_secret = Some("too-short".to_owned().into());
    let err = agentchat::startup::Application::build(settings)
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("at least 32 bytes"), "{err}");
}

#[tokio::test]
async fn browser_sessions_keep_the_refresh_token_in_an_http_only_cookie() {
    let app = TestApp::builder()
        .settings(|s| s.security.refresh_reuse_grace = std::time::Duration::ZERO)
        .start()
        .await;
    app.register("rosa", "password-of-rosa").await;
    let r = app
        .post_json(
            "/api/auth/login",
            &json!({"username": "rosa", "password": "password-of-rosa", "session": "cookie"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let set_cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set_cookie.starts_with("agentchat_refresh="), "{set_cookie}");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/api/auth", "Secure"] {
        assert!(set_cookie.contains(attr), "{attr} missing: {set_cookie}");
    }
    let body: Value = r.json().await.unwrap();
    assert!(body.get("refresh_token").is_none(), "{body}");
    let cookie = set_cookie.split(';').next().unwrap().to_owned();

    let refresh = |cookie: String| {
        app.client
            .post(app.url("/api/auth/refresh"))
            .header("cookie", cookie)
            .send()
    };
    let r = refresh(cookie.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    let rotated = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert_ne!(rotated, cookie);
    let access = r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(me_status(&app, &access).await, 200);
    // The spent cookie is refused (and revokes the family).
    expect_error(refresh(cookie).await.unwrap(), 401, "unauthenticated").await;
    expect_error(
        refresh(rotated.clone()).await.unwrap(),
        401,
        "unauthenticated",
    )
    .await;

    // Logout with the cookie clears it.
    let s = app
        .post_json(
            "/api/auth/login",
            &json!({"username": "rosa", "password": "password-of-rosa", "session": "cookie"}),
        )
        .await;
    let cookie = s.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let r = app
        .client
        .post(app.url("/api/auth/logout"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    expect_error(refresh(cookie).await.unwrap(), 401, "unauthenticated").await;
    // No cookie and no body: a clear 401.
    let r = app
        .client
        .post(app.url("/api/auth/refresh"))
        .send()
        .await
        .unwrap();
    expect_error(r, 401, "unauthenticated").await;
}
