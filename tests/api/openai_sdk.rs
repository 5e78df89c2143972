//! The OpenAI-compatible API driven by the official `openai` Python SDK (PyPI, installed by
//! `tests/openai/install.sh`): plain and streamed answers with usage, a server-side tool, a
//! client-side tool round trip, a forbidden tool, a revoked key, an exhausted budget and an
//! unknown model. The model is the fake upstream; each scenario is one run of
//! `tests/openai/sdk_check.py`, and the server side is checked here.

use std::path::PathBuf;
use std::sync::OnceLock;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

pub const MODEL: &str = "fake-model";

/// The SDK's Python, installed on first use. `None` (said loudly) only when it cannot be.
fn python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = PYTHON.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openai");
        let out = std::process::Command::new("bash")
            .arg(dir.join("install.sh"))
            .output()
            .map_err(|e| format!("running tests/openai/install.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tests/openai/install.sh failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(dir.join(".venv/bin/python"))
    });
    match found {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            eprintln!("SKIPPED: the openai SDK could not be installed: {why}");
            None
        }
    }
}

/// A server on the fake model.
pub fn app_on(fake: &FakeUpstream) -> AppBuilder<'_> {
    TestApp::builder().openai(fake).model(MODEL)
}

/// Creates an API key for the signed-in user: `(id, secret)`.
pub async fn new_key(app: &TestApp, token: &str, name: &str) -> (String, String) {
    let r = app
        .post_as(token, "/api/keys")
        .json(&json!({"name": name}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    (
        body["id"].as_str().unwrap().to_owned(),
        body["key"].as_str().unwrap().to_owned(),
    )
}

fn usage() -> Option<Usage> {
    Some(Usage::new(11, 5))
}

fn text(t: &str) -> Reply {
    Reply::Text {
        text: t.into(),
        usage: usage(),
    }
}

/// Runs one scenario of the script; panics with its output when it fails.
async fn scenario(python: &PathBuf, app: &TestApp, key: &str, name: &str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openai/sdk_check.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(name)
        .env("OPENAI_BASE_URL", app.url("/v1"))
        .env("OPENAI_API_KEY", key)
        .env("AGENTCHAT_MODEL", MODEL)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {name}")),
        "scenario {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = diesel::sql_types::Text)]
    v: String,
}

async fn strings(app: &TestApp, sql: &str) -> Vec<String> {
    let mut db = app.db().await;
    diesel::sql_query(sql)
        .load::<Row>(&mut db)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.v)
        .collect()
}

#[tokio::test]
async fn the_official_openai_sdk_gets_answers_tools_and_errors() {
    let Some(python) = python() else { return };
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member]) = app_on(&fake).start_as(["root", "dev"]).await;
    let (key_id, key) = new_key(&app, &member.access, "laptop").await;

    scenario(&python, &app, &key, "models").await;

    fake.push(text("Hello from the fake model"));
    scenario(&python, &app, &key, "plain").await;
    // Stored as the owner's conversation: the prompt and the answer.
    let convs: Value = app
        .get_as(&member.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = convs["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{convs}");
    assert_eq!(items[0]["title"], "API: Say hello");
    let stored = app
        .conversation(&member.access, items[0]["id"].as_str().unwrap())
        .await;
    let roles: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{stored}");

    fake.push(text("streamed words arrive one by one"));
    scenario(&python, &app, &key, "stream_usage").await;
    // The client's system message reaches the model after the server's own.
    let sent = fake.requests().last().unwrap()["body"].clone();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][1]["content"], "Be brief.");

    fake.push(Reply::tool_call(
        "c1",
        "calculator",
        r#"{"expression":"6*7"}"#,
    ));
    fake.push(text("It is 42."));
    fake.push(Reply::tool_call(
        "c2",
        "calculator",
        r#"{"expression":"2+2"}"#,
    ));
    fake.push(text("It is 4."));
    scenario(&python, &app, &key, "server_tool").await;
    let audited = strings(
        &app,
        "SELECT concat_ws(',', tool, outcome, username) AS v FROM audit_log ORDER BY id",
    )
    .await;
    assert_eq!(audited, ["calculator,ok,dev", "calculator,ok,dev"]);

    fake.push(Reply::tool_call("w1", "get_weather", r#"{"city":"Paris"}"#));
    fake.push(text("Sunny in Paris."));
    fake.push(Reply::tool_call("w2", "get_weather", r#"{"city":"Rome"}"#));
    scenario(&python, &app, &key, "client_tool").await;
    let requests = fake.requests();
    let n = requests.len();
    let offered: Vec<&str> = requests[n - 3]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"get_weather") && offered.contains(&"calculator"),
        "{offered:?}"
    );
    // The follow-up carried the client's result, bound to its call.
    let follow_up = &requests[n - 2]["body"]["messages"];
    let last = follow_up.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "w1");
    assert_eq!(last["content"], "sunny, 21 C");
    // The client's tool never ran here: no audit row names it.
    let audited = strings(&app, "SELECT tool AS v FROM audit_log").await;
    assert!(!audited.iter().any(|t| t == "get_weather"), "{audited:?}");

    fake.push(Reply::tool_call(
        "f1",
        "http_get",
        r#"{"url":"https://example.com"}"#,
    ));
    fake.push(text("I may not fetch pages."));
    scenario(&python, &app, &key, "forbidden_tool").await;
    let refused = strings(
        &app,
        "SELECT outcome AS v FROM audit_log WHERE tool = 'http_get'",
    )
    .await;
    assert_eq!(refused, ["refused"]);

    let calls_before = fake.request_count();
    scenario(&python, &app, &key, "unknown_model").await;

    let r = app
        .delete_as(&member.access, &format!("/api/keys/{key_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    scenario(&python, &app, &key, "revoked_key").await;

    let (_, key2) = new_key(&app, &member.access, "ci").await;
    let admin = app.session_for("root", "password-of-root").await;
    app.set_budget(&admin.access, member.user_id, Some(10))
        .await;
    scenario(&python, &app, &key2, "budget_exhausted").await;
    assert_eq!(
        fake.request_count(),
        calls_before,
        "a refused call reached the model"
    );
    // A refused call leaves no conversation behind.
    let convs: Value = app
        .get_as(&member.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(convs["items"].as_array().unwrap().len(), 8, "{convs}");
}
