//! Hostile input: canary secrets (a user's password, the JWT secret, the LLM API key, a
//! custom tool's header value, the metrics token) never appear in the server's log lines
//! (JSON, with span fields, at debug level), in exported spans, in `/metrics` or in any
//! response body, whatever the traffic: sign-ups, failed and good logins, refreshes,
//! password changes, turns that succeed and fail, tool definitions and calls.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

const PASSWORD: &str = "canary-password-5f0c2a";
const NEW_PASSWORD: &str = "canary-new-password-81d4";
const JWT_SECRET: &str = "canary-jwt-secret-3b9e7d1c-0123456789abcdef";
const API_KEY: &str = "sk-canary-api-key-77aa21";
const HEADER_SECRET: &str = "canary-header-value-c0ffee";
const METRICS_TOKEN: &str = "canary-metrics-token-beef42";
const CANARIES: [&str; 6] = [
    PASSWORD,
    NEW_PASSWORD,
    JWT_SECRET,
    API_KEY,
    HEADER_SECRET,
    METRICS_TOKEN,
];

struct Child2 {
    child: Child,
    address: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Child2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This test binary re-run as `child_server_process`, logging JSON at debug level.
fn start(database_url: &str, llm_base: &str) -> Child2 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_server_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGENTCHAT_CHILD_DATABASE_URL", database_url)
        .env("AGENTCHAT_CHILD_LOG_JSON", "1")
        .env(
            "RUST_LOG",
            "debug,h2=info,hyper=info,tokio_postgres=info,rustls=info",
        )
        .env("AGENTCHAT_JWT_SECRET", JWT_SECRET)
        .env("AGENTCHAT_LLM_PROVIDER", "openai")
        .env("AGENTCHAT_LLM_BASE_URL", llm_base)
        .env("AGENTCHAT_LLM_API_KEY", API_KEY)
        .env("AGENTCHAT_LLM_MAX_RETRIES", "0")
        .env("AGENTCHAT_METRICS_TOKEN", METRICS_TOKEN)
        .env("AGENTCHAT_COOKIE_SECURE", "false")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let err_lines = lines.clone();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            err_lines.lock().unwrap().push(l);
        }
    });
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = out.next().expect("child exited before listening").unwrap();
        lines.lock().unwrap().push(line.clone());
        if let Some(p) = line.split("CHILD_PORT=").nth(1) {
            break p.trim().to_owned();
        }
    };
    let out_lines = lines.clone();
    std::thread::spawn(move || {
        for l in out.map_while(Result::ok) {
            out_lines.lock().unwrap().push(l);
        }
    });
    Child2 {
        child,
        address: format!("http://127.0.0.1:{port}"),
        lines,
    }
}

fn assert_clean(what: &str, text: &str) {
    for c in CANARIES {
        assert!(
            !text.contains(c),
            "{what} contains the canary {c:?}: {text}"
        );
    }
}

#[tokio::test]
async fn canary_secrets_never_reach_logs_spans_metrics_or_bodies() {
    let fake = FakeUpstream::start().await;
    let database_url = fresh_database().await;
    let server = start(&database_url, &fake.base_url_openai());
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", server.address);
    let mut bodies = Vec::new();
    let send = |r: reqwest::RequestBuilder| {
        let r = r.send();
        async move {
            let r = r.await.unwrap();
            let head = format!("{:?}", r.headers());
            let status = r.status();
            (status, format!("{head}\n{}", r.text().await.unwrap()))
        }
    };
    let creds = |u: &str, p: &str| json!({"username": u, "password": p});
    let (s, b) = send(
        http.post(url("/api/auth/register"))
            .json(&creds("alice", PASSWORD)),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    bodies.push(b);
    bodies.push(
        send(
            http.post(url("/api/auth/register"))
                .json(&creds("a", PASSWORD)),
        )
        .await
        .1,
    );
    bodies.push(
        send(
            http.post(url("/api/auth/login"))
                .json(&creds("alice", &format!("{PASSWORD}x"))),
        )
        .await
        .1,
    );
    bodies.push(
        send(
            http.post(url("/api/auth/login"))
                .json(&json!({"username": "alice", "password": PASSWORD, "extra": API_KEY})),
        )
        .await
        .1,
    );
    let (s, b) = send(
        http.post(url("/api/auth/login"))
            .json(&creds("alice", PASSWORD)),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let tokens: Value = serde_json::from_str(b.split_once('\n').unwrap().1).unwrap();
    bodies.push(b);
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    bodies.push(
        send(
            http.post(url("/api/auth/refresh"))
                .json(&json!({"refresh_token": refresh})),
        )
        .await
        .1,
    );
    bodies.push(
        send(
            http.get(url("/api/me"))
                .bearer_auth(format!("{JWT_SECRET}.x.y")),
        )
        .await
        .1,
    );

    // A custom tool with a secret header, called; then turns that succeed and fail.
    let tool = json!({"name": "lookup", "description": "x", "parameters": {"type": "object"},
        "method": "GET", "url_template": "http://127.0.0.1:9/x", "headers": {"X-Api-Key": HEADER_SECRET}});
    bodies.push(
        send(
            http.post(url("/api/admin/tools/custom"))
                .bearer_auth(&access)
                .json(&tool),
        )
        .await
        .1,
    );
    bodies.push(
        send(
            http.get(url("/api/admin/tools/custom"))
                .bearer_auth(&access),
        )
        .await
        .1,
    );
    bodies.push(
        send(
            http.put(url("/api/admin/roles/admin"))
                .bearer_auth(&access)
                .json(&json!({"tools": ["calculator", "lookup"]})),
        )
        .await
        .1,
    );
    let (_, b) = send(
        http.post(url("/api/conversations"))
            .bearer_auth(&access)
            .json(&json!({})),
    )
    .await;
    let conv: Value = serde_json::from_str(b.split_once('\n').unwrap().1).unwrap();
    let conv = conv["id"].as_str().unwrap().to_owned();
    fake.push(Reply::tool_call("t1", "lookup", "{}"));
    fake.push(Reply::text("done"));
    fake.push(Reply::error(401, "bad key"));
    for content in ["call the tool", "and again"] {
        let path = format!("/api/conversations/{conv}/messages");
        bodies.push(
            send(
                http.post(url(&path))
                    .bearer_auth(&access)
                    .json(&json!({"content": content})),
            )
            .await
            .1,
        );
    }
    let change = json!({"current_password": PASSWORD, "new_password": NEW_PASSWORD});
    let (s, b) = send(
        http.post(url("/api/me/password"))
            .bearer_auth(&access)
            .json(&change),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    bodies.push(b);
    bodies.push(send(http.get(url("/metrics"))).await.1);
    bodies.push(
        send(http.get(url("/metrics")).bearer_auth("wrong-token"))
            .await
            .1,
    );
    let (s, metrics) = send(http.get(url("/metrics")).bearer_auth(METRICS_TOKEN)).await;
    assert_eq!(s, 200);
    assert!(metrics.contains("agentchat_tool_calls_total"), "{metrics}");
    bodies.push(metrics);
    for b in &bodies {
        assert_clean("a response", b);
    }
    // The upstream saw the key where it belongs, so the canary was really in use.
    assert!(fake
        .requests()
        .iter()
        .any(|r| r.to_string().contains(API_KEY)));

    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = server.lines.lock().unwrap().clone();
    assert!(
        lines.len() > 5,
        "the child logged almost nothing: {lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("the model call failed")),
        "no upstream failure logged"
    );
    for l in &lines {
        assert_clean("a log line", l);
    }
}

#[tokio::test]
async fn exported_spans_carry_no_secrets() {
    let exporter = crate::observability::exporter();
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder()
        .openai(&fake)
        .settings(|s| {
            s.auth.jwt_secret = Some(JWT_SECRET.to_owned().into());
            s.llm.api_key = Some(API_KEY.to_owned().into());
            s.llm.capture_content = true;
        })
        .start()
        .await;
    app.register("spanner", PASSWORD).await;
    let _ = app.login("spanner", "wrong-password-here").await;
    let s = app.session_for("spanner", PASSWORD).await;
    fake.push(Reply::error(500, "upstream exploded"));
    let conv = app.new_conversation(&s.access).await;
    let _ = app.chat(&s.access, &conv, "hello").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spans = exporter.get_finished_spans().unwrap();
    assert!(!spans.is_empty());
    for span in spans {
        assert_clean("a span", &format!("{span:?}"));
    }
}
