//! Regression tests for the outside review's findings 1–5 (issue 15), each through the
//! running server: deep-path quota bypass, login throttle memory and parallel bursts, the
//! trusted-proxy setting, custom-tool secrets following the URL, and the html_text panic.

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::tiny_server::{Behaviour, TinyServer};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::tools::{app_with, call_tool};

async fn put_file(app: &TestApp, token: &str, path: &str, body: Vec<u8>) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/api/files/{path}")))
        .bearer_auth(token)
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn usage(app: &TestApp, token: &str) -> Value {
    app.get_as(token, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Finding 1: files under more directory levels than the walk sees were never counted.
#[tokio::test]
async fn deep_paths_cannot_bypass_the_quota() {
    let app = TestApp::builder()
        .settings(|s| s.tools.quota.max_bytes = 200 * 1024)
        .start()
        .await;
    let s = app.signed_up("digger").await;
    let deep = format!("{}/f.bin", vec!["d"; 70].join("/"));
    let r = put_file(&app, &s.access, &deep, vec![b'x'; 150 * 1024]).await;
    expect_error(r, 400, "invalid_path").await;
    // The deepest path accepted is listed and counted, so the quota holds at any depth.
    let mut depth = 1;
    loop {
        let path = format!("{}/f.bin", vec!["d"; depth].join("/"));
        let r = put_file(&app, &s.access, &path, vec![b'x'; 150 * 1024]).await;
        if r.status() == 400 {
            break;
        }
        assert_eq!(r.status(), 201, "{path}");
        let listed = usage(&app, &s.access).await;
        assert_eq!(listed["usage"]["bytes"], 150 * 1024, "{path}");
        assert_eq!(listed["items"][0]["path"], path);
        let r = put_file(&app, &s.access, &format!("{path}2"), vec![b'x'; 100 * 1024]).await;
        expect_error(r, 413, "quota_exceeded").await;
        let r = app
            .delete_as(&s.access, &format!("/api/files/{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        depth += 8;
    }
    assert!(
        depth > 16,
        "paths of reasonable depth are allowed ({depth})"
    );
}

/// Resident set size of this process (server and client share it), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Finding 2: a huge username is refused before it reaches the throttle or the hasher.
#[tokio::test]
async fn oversized_login_fields_are_refused_before_anything_else() {
    let app = TestApp::builder().start().await;
    app.signed_up("owner").await;
    let huge = "u".repeat(512 * 1024);
    let r = app.login(&huge, "whatever-password").await;
    expect_error(r, 400, "invalid_username").await;
    let r = app.login("owner", &"p".repeat(100_000)).await;
    expect_error(r, 400, "invalid_password").await;
    // The review's attack was 120 failed logins with distinct 1 MB usernames (+160 MiB RSS);
    // 10 keep the test quick (run with 120 and --nocapture to measure).
    let rss_before = rss_kib();
    for i in 0..10 {
        let name = format!("{i:04}{}", "n".repeat(1_000_000));
        expect_error(
            app.login(&name, "whatever-password").await,
            400,
            "invalid_username",
        )
        .await;
    }
    eprintln!(
        "RSS after 10 x 1 MB usernames: {} KiB more (whole test process)",
        rss_kib().saturating_sub(rss_before)
    );
    // Nothing was counted against the real account.
    assert_eq!(app.login("owner", "password-of-owner").await.status(), 200);
}

/// Finding 3: the attempt is counted before hashing, so a parallel burst of wrong
/// passwords gets at most the limit of password checks (401s); the rest are 429s.
#[tokio::test]
async fn a_parallel_burst_gets_at_most_the_limit_of_password_checks() {
    let app = TestApp::builder()
        .settings(|s| {
            s.auth.account_failure_limit = 5;
            s.auth.concurrent_hashes_setting = 2;
        })
        .start()
        .await;
    app.signed_up("target").await;
    let burst = (0..60).map(|i| {
        let app = &app;
        async move {
            app.login("target", &format!("wrong-guess-{i}"))
                .await
                .status()
        }
    });
    let statuses = futures_util::future::join_all(burst).await;
    let checked = statuses.iter().filter(|s| s.as_u16() == 401).count();
    let refused = statuses.iter().filter(|s| s.as_u16() == 429).count();
    eprintln!("60 parallel wrong passwords: {checked} password checks, {refused} refused with 429");
    assert!(checked <= 5, "{checked} password checks: {statuses:?}");
    assert_eq!(checked + refused, 60, "{statuses:?}");
}

async fn login_from(app: &TestApp, forwarded_for: &str, user: &str) -> u16 {
    app.client
        .post(app.url("/api/auth/login"))
        .header("x-forwarded-for", forwarded_for)
        .json(&json!({"username": user, "password": "wrong-password"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Finding 3: `X-Forwarded-For` names the client only when the peer is a trusted proxy.
#[tokio::test]
async fn forwarded_for_is_honoured_only_from_trusted_proxies() {
    let behind_proxy = TestApp::builder()
        .settings(|s| {
            s.auth.address_failure_limit = 3;
            s.security.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
        })
        .start()
        .await;
    for i in 0..3 {
        assert_eq!(
            login_from(&behind_proxy, "203.0.113.5", &format!("u{i}x")).await,
            401
        );
    }
    assert_eq!(login_from(&behind_proxy, "203.0.113.5", "u9x").await, 429);
    // Another client behind the same proxy is not affected.
    assert_eq!(login_from(&behind_proxy, "203.0.113.6", "u9x").await, 401);

    let direct = TestApp::builder()
        .settings(|s| s.auth.address_failure_limit = 3)
        .start()
        .await;
    for i in 0..3 {
        let spoofed = format!("198.51.100.{i}");
        assert_eq!(login_from(&direct, &spoofed, &format!("u{i}x")).await, 401);
    }
    // Spoofing a new address does not reset an untrusted peer's count.
    assert_eq!(login_from(&direct, "198.51.100.77", "u9x").await, 429);
}

async fn define_tool(app: &TestApp, admin: &str, method: &str, body: Value) -> reqwest::Response {
    let url = if method == "POST" {
        app.url("/api/admin/tools/custom")
    } else {
        app.url(&format!(
            "/api/admin/tools/custom/{}",
            body["name"].as_str().unwrap()
        ))
    };
    let req = if method == "POST" {
        app.client.post(url)
    } else {
        app.client.put(url)
    };
    req.bearer_auth(admin).json(&body).send().await.unwrap()
}

fn tool_body(name: &str, url: String, headers: Value) -> Value {
    json!({
        "name": name, "description": "Look something up",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "method": "GET", "url_template": url, "headers": headers,
    })
}

/// Finding 4: stored secret headers do not follow the tool to another origin, not by an
/// edit, not by a redirect; a `..` argument cannot walk up a path segment.
#[tokio::test]
async fn custom_tool_secrets_stay_with_their_origin() {
    let fake = FakeUpstream::start().await;
    let home = TinyServer::start(Behaviour::Body("application/json", "{}".into())).await;
    let elsewhere = TinyServer::start(Behaviour::Body("application/json", "{}".into())).await;
    let bouncer = TinyServer::start(Behaviour::Redirect(elsewhere.url("/stolen"))).await;
    let allowed = vec![
        home.addr.to_string(),
        elsewhere.addr.to_string(),
        bouncer.addr.to_string(),
    ];
    let (app, [admin]) = app_with(&fake, allowed, 16 * 1024).start_as(["boss"]).await;
    let secret = json!({"X-Api-Key": "canary-secret-header"});
    let r = define_tool(
        &app,
        &admin.access,
        "POST",
        tool_body("lookup", home.url("/items/{id}/raw"), secret.clone()),
    )
    .await;
    assert_eq!(r.status(), 201);
    let r = define_tool(
        &app,
        &admin.access,
        "POST",
        tool_body("bounce", bouncer.url("/x/{id}"), secret.clone()),
    )
    .await;
    assert_eq!(r.status(), 201);
    // Moving the tool to another origin without sending headers again is refused.
    let moved = tool_body("lookup", elsewhere.url("/items/{id}"), json!({}));
    let r = define_tool(&app, &admin.access, "PUT", moved).await;
    expect_error(r, 422, "headers_required").await;
    // Placeholders in the host are refused outright.
    let r = define_tool(
        &app,
        &admin.access,
        "POST",
        tool_body("anyhost", "http://{id}/x".into(), secret),
    )
    .await;
    expect_error(r, 400, "invalid_url").await;
    // Same origin, no headers sent: the stored ones are kept.
    let same = tool_body("lookup", home.url("/items/{id}/raw"), json!({}));
    assert_eq!(
        define_tool(&app, &admin.access, "PUT", same).await.status(),
        200
    );
    let mut tools: Vec<String> = ["calculator", "current_time", "http_get"]
        .map(String::from)
        .to_vec();
    tools.extend(["lookup".to_owned(), "bounce".to_owned()]);
    assert_eq!(
        app.put_role(&admin.access, "admin", json!({"tools": tools}))
            .await
            .status(),
        200
    );

    let walked = call_tool(&app, &fake, &admin.access, "lookup", json!({"id": ".."})).await;
    assert_eq!(walked["success"], false, "{walked}");
    let ok = call_tool(
        &app,
        &fake,
        &admin.access,
        "lookup",
        json!({"id": "a/../b"}),
    )
    .await;
    assert_eq!(ok["success"], true, "{ok}");
    let seen = home.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].starts_with("GET /items/a%2F..%2Fb/raw"),
        "{}",
        seen[0]
    );
    assert!(seen[0]
        .to_ascii_lowercase()
        .contains("x-api-key: canary-secret-header"));

    let bounced = call_tool(&app, &fake, &admin.access, "bounce", json!({"id": "1"})).await;
    assert_eq!(bounced["success"], false, "{bounced}");
    assert_eq!(bouncer.hits(), 1);
    assert_eq!(
        elsewhere.hits(),
        0,
        "the redirect carried the secret elsewhere"
    );
}

/// Finding 5: a page ending inside a tag with a non-ASCII character made http_get panic.
#[tokio::test]
async fn http_get_reads_a_page_cut_inside_a_non_ascii_tag() {
    let fake = FakeUpstream::start().await;
    let page = TinyServer::start(Behaviour::Body(
        "text/html; charset=utf-8",
        "<html><body><p>Bonjour</p><a title=\"café".into(),
    ))
    .await;
    let (app, [admin]) = app_with(&fake, vec![page.addr.to_string()], 16 * 1024)
        .start_as(["reader"])
        .await;
    let r = call_tool(
        &app,
        &fake,
        &admin.access,
        "http_get",
        json!({"url": page.url("/")}),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert!(r.to_string().contains("Bonjour"), "{r}");
}
