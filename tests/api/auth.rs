use agentchat::config::Registration;
use agentchat_tests::*;
use serde_json::{json, Value};

#[tokio::test]
async fn first_user_is_admin_later_ones_members() {
    let app = TestApp::builder().start().await;
    let r = app.register("alice", "correct-horse").await;
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["role"], "admin");
    assert_eq!(body["username"], "alice");
    assert!(body.get("password_hash").is_none());
    let r = app.register("bob", "battery-staple").await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["role"], "member");
}

#[tokio::test]
async fn concurrent_first_registrations_make_exactly_one_admin() {
    let app = TestApp::builder().start().await;
    let mut handles = Vec::new();
    for i in 0..6 {
        let client = app.client.clone();
        let url = app.url("/api/auth/register");
        handles.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .json(&json!({"username": format!("racer{i}"), "password": "long-enough"}))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut admins = 0;
    for h in handles {
        if h.await.unwrap() == "admin" {
            admins += 1;
        }
    }
    assert_eq!(admins, 1);
}

#[tokio::test]
async fn duplicate_username_is_a_conflict_case_insensitively() {
    let app = TestApp::builder().start().await;
    assert_eq!(app.register("Carol", "password-1").await.status(), 201);
    expect_error(
        app.register("carol", "password-2").await,
        409,
        "username_taken",
    )
    .await;
}

#[tokio::test]
async fn bad_registrations_are_refused_and_change_nothing() {
    let app = TestApp::builder().start().await;
    expect_error(app.register("dave", "short").await, 400, "invalid_password").await;
    expect_error(
        app.register("dave", &"x".repeat(129)).await,
        400,
        "invalid_password",
    )
    .await;
    expect_error(
        app.register("d", "long-enough").await,
        400,
        "invalid_username",
    )
    .await;
    expect_error(
        app.register("dave smith", "long-enough").await,
        400,
        "invalid_username",
    )
    .await;
    // A 128-character password is accepted and not truncated: 127 of its characters fail.
    let long = "y".repeat(128);
    assert_eq!(app.register("dave", &long).await.status(), 201);
    assert_eq!(app.login("dave", &long).await.status(), 200);
    expect_error(
        app.login("dave", &long[..127]).await,
        401,
        "unauthenticated",
    )
    .await;
}

#[tokio::test]
async fn malformed_bodies_get_clear_400s() {
    let app = TestApp::builder().start().await;
    let post = |body: &'static str, ct: &'static str| {
        app.client
            .post(app.url("/api/auth/register"))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let b = expect_error(
        post("{\"username\": ", "application/json").await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("malformed JSON"));
    let b = expect_error(
        post(
            r#"{"username": 42, "password": "long-enough"}"#,
            "application/json",
        )
        .await
        .unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`username`"),
        "{b}"
    );
    let b = expect_error(
        post(r#"{"username": "erin"}"#, "application/json")
            .await
            .unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert!(
        b["error"]["message"].as_str().unwrap().contains("password"),
        "{b}"
    );
    expect_error(
        post("", "application/json").await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    expect_error(
        post("username=x", "application/x-www-form-urlencoded")
            .await
            .unwrap(),
        415,
        "unsupported_media_type",
    )
    .await;
}

#[tokio::test]
async fn oversized_body_is_413() {
    let app = TestApp::builder()
        .settings(|s| s.max_body_bytes = 4096)
        .start()
        .await;
    let huge = json!({"username": "frank", "password": "p".repeat(10_000)});
    let r = app.post_json("/api/auth/register", &huge).await;
    expect_error(r, 413, "payload_too_large").await;
    // Chunked (no Content-Length) is cut off as well.
    let body = format!(
        r#"{{"username":"frank","password":"{}"}}"#,
        "p".repeat(10_000)
    );
    let stream = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(body)]);
    let r = app
        .client
        .post(app.url("/api/auth/register"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    expect_error(r, 413, "payload_too_large").await;
    let mut db = app.db().await;
    use diesel_async::RunQueryDsl;
    let n: i64 = diesel::sql_query("SELECT count(*) AS n FROM users")
        .get_result::<Count>(&mut db)
        .await
        .unwrap()
        .n;
    assert_eq!(n, 0);
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[tokio::test]
async fn closed_registration_refuses_self_signup() {
    let app = TestApp::builder()
        .settings(|s| s.auth.registration = Registration::Closed)
        .start()
        .await;
    expect_error(app.register("gina", "long-enough").await, 403, "forbidden").await;
}

#[tokio::test]
async fn unknown_user_and_wrong_password_look_the_same() {
    let app = TestApp::builder().start().await;
    app.signed_up("hank").await;
    let a = app.login("hank", "wrong-password").await;
    let b = app.login("nobody", "wrong-password").await;
    assert_eq!(a.status(), 401);
    assert_eq!(b.status(), 401);
    assert_eq!(a.text().await.unwrap(), b.text().await.unwrap());
}

#[tokio::test]
async fn failed_logins_are_throttled_then_recover() {
    let app = TestApp::builder()
        .settings(|s| s.auth.account_failure_limit = 3)
        .start()
        .await;
    app.signed_up("ivy").await;
    for _ in 0..3 {
        assert_eq!(app.login("ivy", "wrong-password").await.status(), 401);
    }
    let r = app.login("ivy", "password-of-ivy").await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "retry-after {retry}");
    expect_error(r, 429, "too_many_attempts").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(app.login("ivy", "password-of-ivy").await.status(), 200);
}

#[tokio::test]
async fn login_returns_a_token_pair_that_works() {
    let app = TestApp::builder().start().await;
    app.register("jack", "password-of-jack").await;
    let r = app.login("JACK", "password-of-jack").await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert!(body["expires_in"].as_u64().unwrap() <= 3600);
    let access = body["access_token"].as_str().unwrap();
    let me: Value = app
        .get_as(access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["username"], "jack");
    assert_eq!(me["role"], "admin");
    assert!(me["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("calculator")));
    assert!(me["budget"]["limit"].is_null());
    assert_eq!(me["budget"]["period"], "month");
}
