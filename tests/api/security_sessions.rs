//! Regression tests for the review's item 6 (issue 15): refresh grace window and absolute
//! lifetime, password change, JSON content type, `Origin` on cookie routes, bounded
//! uploads, sanitised upstream errors and bounded tool-name metric labels.

use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

async fn refresh(app: &TestApp, token: &str) -> reqwest::Response {
    app.post_json("/api/auth/refresh", &json!({"refresh_token": token}))
        .await
}

async fn me_status(app: &TestApp, access: &str) -> u16 {
    app.get_as(access, "/api/me")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn two_tabs_refreshing_at_once_keep_the_session_but_a_late_reuse_revokes_it() {
    let app = TestApp::builder()
        .settings(|s| s.security.refresh_reuse_grace = Duration::from_secs(2))
        .start()
        .await;
    let s = app.signed_up("tabby").await;
    let (a, b) = tokio::join!(refresh(&app, &s.refresh), refresh(&app, &s.refresh));
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    let a: Value = a.json().await.unwrap();
    let b: Value = b.json().await.unwrap();
    let next = a["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(a["refresh_token"], b["refresh_token"]);
    assert_eq!(
        me_status(&app, b["access_token"].as_str().unwrap()).await,
        200
    );
    // After the window, presenting the spent token is a reuse: the family dies.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    expect_error(refresh(&app, &s.refresh).await, 401, "unauthenticated").await;
    expect_error(refresh(&app, &next).await, 401, "unauthenticated").await;
}

#[tokio::test]
async fn a_token_older_than_its_successor_gets_no_grace() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("chain").await;
    let r: Value = refresh(&app, &s.refresh).await.json().await.unwrap();
    let second = r["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(refresh(&app, &second).await.status(), 200);
    // The first token is no longer the just-replaced one: a reuse, not a second tab.
    expect_error(refresh(&app, &s.refresh).await, 401, "unauthenticated").await;
}

#[tokio::test]
async fn refresh_sessions_end_at_their_absolute_lifetime() {
    let app = TestApp::builder()
        .settings(|s| s.security.session_max_lifetime = Duration::from_secs(2))
        .start()
        .await;
    let s = app.signed_up("mayfly").await;
    let r = refresh(&app, &s.refresh).await;
    assert_eq!(r.status(), 200);
    let next = r.json::<Value>().await.unwrap()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(2200)).await;
    expect_error(refresh(&app, &next).await, 401, "unauthenticated").await;
}

#[tokio::test]
async fn changing_the_password_ends_the_other_sessions() {
    let app = TestApp::builder().start().await;
    let here = app.signed_up("pat").await;
    let there = app.session_for("pat", "password-of-pat").await;
    let change = |current: &str, new: &str| {
        app.post_as(&here.access, "/api/me/password")
            .json(&json!({"current_password": current, "new_password": new}))
            .send()
    };
    let r = change("wrong-password", "brand-new-password")
        .await
        .unwrap();
    expect_error(r, 403, "wrong_password").await;
    let r = change("password-of-pat", "short").await.unwrap();
    expect_error(r, 400, "invalid_password").await;
    let r = change("password-of-pat", "brand-new-password")
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let pair: Value = r.json().await.unwrap();
    assert_eq!(
        me_status(&app, pair["access_token"].as_str().unwrap()).await,
        200
    );
    assert_eq!(
        refresh(&app, pair["refresh_token"].as_str().unwrap())
            .await
            .status(),
        200
    );
    // Every other session is over, access and refresh tokens alike.
    assert_eq!(me_status(&app, &there.access).await, 401);
    assert_eq!(me_status(&app, &here.access).await, 401);
    expect_error(refresh(&app, &there.refresh).await, 401, "unauthenticated").await;
    assert_eq!(app.login("pat", "password-of-pat").await.status(), 401);
    assert_eq!(app.login("pat", "brand-new-password").await.status(), 200);
    // Mass assignment is refused, not ignored.
    let r = app
        .post_as(pair["access_token"].as_str().unwrap(), "/api/me/password")
        .json(&json!({"current_password": "brand-new-password",
                      "new_password": "another-password", "role": "admin"}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_json").await;
}

#[tokio::test]
async fn json_bodies_need_the_json_content_type() {
    let app = TestApp::builder().start().await;
    app.signed_up("typist").await;
    let body = r#"{"username":"typist","password":"password-of-typist"}"#;
    for ct in [None, Some("text/plain")] {
        let mut req = app.client.post(app.url("/api/auth/login")).body(body);
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        expect_error(req.send().await.unwrap(), 415, "unsupported_media_type").await;
    }
    let ok = app
        .client
        .post(app.url("/api/auth/login"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

async fn cookie_login(app: &TestApp, origin: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/login"))
        .header("origin", origin)
        .json(&json!({"username": "cora", "password": "password-of-cora", "session": "cookie"}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn cookie_routes_refuse_a_foreign_origin() {
    let app = TestApp::builder().start().await;
    app.register("cora", "password-of-cora").await;
    let r = cookie_login(&app, "https://evil.example").await;
    expect_error(r, 403, "forbidden").await;
    let r = cookie_login(&app, &app.address).await;
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    for path in ["/api/auth/refresh", "/api/auth/logout"] {
        let r = app
            .client
            .post(app.url(path))
            .header("cookie", &cookie)
            .header("origin", "https://evil.example")
            .send()
            .await
            .unwrap();
        expect_error(r, 403, "forbidden").await;
    }
    let r = app
        .client
        .post(app.url("/api/auth/refresh"))
        .header("cookie", &cookie)
        .header("origin", &app.address)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn concurrent_uploads_are_bounded_before_buffering() {
    let app = TestApp::builder()
        .settings(|s| s.security.max_concurrent_uploads_per_user = 1)
        .start()
        .await;
    let s = app.signed_up("uploader").await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let slow = app
        .client
        .put(app.url("/api/files/slow.bin"))
        .bearer_auth(&s.access)
        .body(reqwest::Body::wrap_stream(stream))
        .send();
    let slow = tokio::spawn(slow);
    tx.send(Ok(vec![b'a'; 1024])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = app
        .client
        .put(app.url("/api/files/second.bin"))
        .bearer_auth(&s.access)
        .body("x")
        .send()
        .await
        .unwrap();
    expect_error(second, 429, "too_many_uploads").await;
    drop(tx);
    assert_eq!(slow.await.unwrap().unwrap().status(), 201);
    let again = app
        .client
        .put(app.url("/api/files/second.bin"))
        .bearer_auth(&s.access)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 201);
}

fn last_error(events: &[SseEvent]) -> Value {
    let last = events.last().unwrap();
    assert_eq!(last.event, "error", "{events:?}");
    last.data.clone()
}

#[tokio::test]
async fn upstream_error_text_never_reaches_the_user() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::error(
            400,
            "invalid key sk-canary-upstream at llm-gw.internal.corp",
        )
        .scripted(),
    ));
    let (app, [s]) = TestApp::builder().openai(&fake).start_as(["sad"]).await;
    let conv = app.new_conversation(&s.access).await;
    let err = last_error(&app.chat(&s.access, &conv, "hello").await);
    assert_eq!(err["code"], "upstream_error");
    let text = err.to_string();
    assert!(
        !text.contains("canary") && !text.contains("internal.corp"),
        "{text}"
    );
    assert!(
        err["message"].as_str().unwrap().contains("administrator"),
        "{err}"
    );

    // A connection error names no host or port either.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (app, [s]) = TestApp::builder()
        .openai_at(format!("http://127.0.0.1:{port}/v1"))
        .start_as(["lonely"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let err = last_error(&app.chat(&s.access, &conv, "hello").await);
    assert_eq!(err["code"], "upstream_unreachable");
    let text = err.to_string();
    assert!(
        !text.contains("127.0.0.1") && !text.contains(&port.to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn model_chosen_tool_names_do_not_become_metric_labels() {
    let fake = FakeUpstream::start().await;
    let (app, [s]) = crate::tools::app_with(&fake, vec![], 16 * 1024)
        .start_as(["labeler"])
        .await;
    let name = "made_up_tool_7f3a9c";
    let r = crate::tools::call_tool(&app, &fake, &s.access, name, json!({})).await;
    assert_eq!(r["success"], false);
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains(name), "the model's name became a label");
    assert!(metrics.contains(r#"tool="unknown""#), "{metrics}");
}
