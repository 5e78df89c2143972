//! Fallback and circuit breakers (issue 30): a model whose provider fails before its first
//! token is answered by its fallback in the same turn (an OpenAI-format upstream failing, an
//! Anthropic-format one answering); repeated failures open the provider's breaker, which
//! every process then honours (its calls go straight to the fallback) until a probe after
//! the cool-down closes it again. A fallback must be allowed for the role, and nothing is
//! retried once the model has begun to answer.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel::sql_types::{Nullable, Text};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use serde_json::{json, Value};

/// `gpt` (OpenAI fake, falls back to `claude`) and `claude` (Anthropic fake); breakers open
/// after 2 failures in a row and stay open for a second.
pub(crate) fn catalogue(
    openai: &FakeUpstream,
    anthropic: &FakeUpstream,
) -> impl Fn(&mut agentchat::config::Settings) + Clone {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": openai.base_url_openai(), "api_key": "sk-oa", "max_retries": 0},
        {"name": "an", "kind": "anthropic", "base_url": anthropic.base_url_anthropic(), "api_key": "sk-an", "max_retries": 0},
    ]);
    let models = json!([
        {"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o", "fallbacks": ["claude"],
         "prices": [{"currency": "USD", "input": "2.5", "output": "10"}]},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5",
         "prices": [{"currency": "USD", "input": "3", "output": "15"}]},
    ]);
    move |s| {
        s.providers = serde_json::from_value(providers.clone()).unwrap();
        s.models = serde_json::from_value(models.clone()).unwrap();
        s.llm.breaker_failures = 2;
        s.llm.breaker_min_calls = 1_000;
        // One user's failures open it here (the mechanics); `breaker_fairness` tests that
        // by default they alone do not.
        s.llm.breaker_min_users = 1;
        s.llm.breaker_cooldown = Duration::from_secs(1);
    }
}

pub(crate) fn claude_answers(anthropic: &FakeUpstream) {
    anthropic.set_default(Some(
        Reply::Text {
            text: "from claude".into(),
            usage: Some(Usage::new(30, 5)),
        }
        .scripted(),
    ));
}

#[derive(QueryableByName, Debug, PartialEq)]
struct UsageRow {
    #[diesel(sql_type = Text)]
    model: String,
    #[diesel(sql_type = Nullable<Text>)]
    fallback_from: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    fallback_reason: Option<String>,
}

async fn usage_rows(app: &TestApp) -> Vec<(String, Option<String>, Option<String>)> {
    let mut db = app.db().await;
    let rows: Vec<UsageRow> = diesel::sql_query(
        "SELECT model, fallback_from, fallback_reason FROM usage_records ORDER BY id",
    )
    .load(&mut db)
    .await
    .unwrap();
    rows.into_iter()
        .map(|r| (r.model, r.fallback_from, r.fallback_reason))
        .collect()
}

/// `provider`'s breaker as `/readyz` shows it to an admin (`admin`'s access token).
async fn readyz_breaker(app: &TestApp, admin: &str, provider: &str) -> String {
    let body: Value = app
        .get_as(admin, "/readyz")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["providers"][provider]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits up to 5 s for `app` to see `provider`'s breaker in `state`.
async fn until_breaker(app: &TestApp, admin: &str, provider: &str, state: &str) {
    for _ in 0..100 {
        if readyz_breaker(app, admin, provider).await == state {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{provider}'s breaker never became {state}: {}",
        readyz_breaker(app, admin, provider).await
    );
}

async fn metrics(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_failing_provider_falls_back_opens_its_breaker_everywhere_and_a_probe_closes_it() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    openai.set_default(Some(Reply::error(503, "overloaded").scripted()));
    claude_answers(&anthropic);
    let setup = catalogue(&openai, &anthropic);
    let app = TestApp::builder().settings(setup.clone()).start().await;
    let mut other_settings = test_settings(&app.database_url);
    setup(&mut other_settings);
    let other = TestApp::builder()
        .exact_settings(other_settings)
        .start()
        .await;
    let admin = app.signed_up("ada").await;
    let user = app.signed_up("fern").await;
    let conv = app.new_conversation(&user.access).await;

    // Two turns: gpt fails before its first token each time, claude answers in the turn.
    for round in 1..=2 {
        let events = app.chat(&user.access, &conv, "hello").await;
        assert_eq!(streamed_text(&events), "from claude", "round {round}");
        assert_eq!(event_names(&events).last().unwrap(), "done");
        assert_eq!(openai.request_count(), round);
        assert_eq!(anthropic.request_count(), round);
    }
    assert_eq!(
        anthropic.requests()[0]["body"]["model"],
        "claude-sonnet-4-5"
    );
    // The ledger says who answered, in place of whom, and why.
    let failed_over = (
        "claude".to_owned(),
        Some("gpt".to_owned()),
        Some("upstream_error".to_owned()),
    );
    assert_eq!(usage_rows(&app).await, vec![failed_over.clone(); 2]);
    let stored = app.conversation(&user.access, &conv).await;
    let answers: Vec<_> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answers, ["complete", "complete"]);

    // Two failures in a row opened oa's breaker, here and (through the database) on the
    // other process; ops see it in /metrics and the admin view.
    assert_eq!(readyz_breaker(&app, &admin.access, "oa").await, "open");
    assert_eq!(readyz_breaker(&app, &admin.access, "an").await, "closed");
    until_breaker(&other, &admin.access, "oa", "open").await;
    let m = metrics(&app).await;
    assert!(
        m.contains(r#"agentchat_provider_breaker_state{provider="oa",state="open"} 1"#),
        "{m}"
    );
    assert!(
        m.contains(r#"agentchat_model_fallbacks_total{fallback="claude",model="gpt",reason="upstream_error"} 2"#),
        "{m}"
    );
    let catalogue: Value = app
        .get_as(&admin.access, "/api/admin/models")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let oa = &catalogue["providers"][0];
    assert_eq!(oa["name"], "oa");
    assert_eq!(oa["breaker"]["state"], "open", "{oa}");
    assert!(oa["breaker"]["open_until"].is_string(), "{oa}");
    assert!(
        oa["breaker"]["last_error"]
            .as_str()
            .unwrap()
            .starts_with("upstream_error"),
        "{oa}"
    );

    // While open, gpt is not even tried: on either process, claude answers at once.
    let events = other.chat(&user.access, &conv, "again").await;
    assert_eq!(streamed_text(&events), "from claude");
    assert_eq!(openai.request_count(), 2, "an open breaker sends nothing");
    let rows = usage_rows(&app).await;
    assert_eq!(
        rows.last().unwrap().2.as_deref(),
        Some("circuit_open"),
        "{rows:?}"
    );

    // The provider recovers; after the cool-down one probe goes through and closes the
    // breaker, on both processes.
    openai.set_default(Some(
        Reply::Text {
            text: "from gpt".into(),
            usage: Some(Usage::new(30, 5)),
        }
        .scripted(),
    ));
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(readyz_breaker(&app, &admin.access, "oa").await, "half_open");
    let events = app.chat(&user.access, &conv, "and now?").await;
    assert_eq!(streamed_text(&events), "from gpt");
    assert_eq!(openai.request_count(), 3);
    assert_eq!(readyz_breaker(&app, &admin.access, "oa").await, "closed");
    until_breaker(&other, &admin.access, "oa", "closed").await;
    assert_eq!(
        usage_rows(&app).await.last().unwrap(),
        &("gpt".to_owned(), None, None)
    );
}

#[tokio::test]
async fn a_fallback_the_role_may_not_use_is_skipped_and_nothing_is_retried_after_the_first_token() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    claude_answers(&anthropic);
    let app = TestApp::builder()
        .settings(catalogue(&openai, &anthropic))
        .start()
        .await;
    let admin = app.signed_up("root").await;
    let user = app.signed_up("gus").await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": [], "models": ["gpt"]}),
        )
        .await;
    assert_eq!(r.status(), 200);

    // The member may not use claude: gpt's failure is the turn's error, claude is not asked.
    openai.push(Reply::error(503, "overloaded"));
    let conv = app.new_conversation(&user.access).await;
    let events = app.chat(&user.access, &conv, "hello").await;
    let error = events
        .iter()
        .find(|e| e.event == "error")
        .expect("an error");
    assert_eq!(error.data["code"], "upstream_error", "{:?}", error.data);
    assert_eq!(anthropic.request_count(), 0);

    // The admin may use both, but gpt began its answer (a tool call) before the stream
    // broke: the turn fails rather than asking claude to answer again.
    openai.push(Reply::CutMidToolCall);
    let conv = app.new_conversation(&admin.access).await;
    let events = app.chat(&admin.access, &conv, "hello").await;
    assert!(events.iter().any(|e| e.event == "error"), "{events:?}");
    assert_eq!(
        anthropic.request_count(),
        0,
        "retried after the first token"
    );
}

/// A role losing the turn's model between two steps stops the turn before its next call,
/// and the reservation that step's commit made is settled then (not left to the sweeper).
#[tokio::test]
async fn a_model_revoked_mid_turn_stops_the_turn_and_frees_its_reservation() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let setup = catalogue(&openai, &anthropic);
    let (app, [admin, user]) = TestApp::builder()
        .settings(setup)
        .role(
            "member",
            json!({"tools": ["calculator"], "models": ["gpt", "claude"]}),
        )
        .budget("vic", Some(50_000))
        .start_as(["root", "vic"])
        .await;
    // The first call asks for the calculator, slowly: the revocation lands meanwhile.
    openai.push(
        Reply::tool_call("c1", "calculator", r#"{"expression":"1+1"}"#)
            .chunk_delay(Duration::from_millis(300)),
    );
    openai.push(Reply::text("never asked"));
    let conv = app
        .create_conversation_with(&user.access, json!({"model": "gpt"}))
        .await;
    let (app2, token, conv2) = (app.client.clone(), user.access.clone(), conv.clone());
    let url = app.url(&format!("/api/conversations/{conv2}/messages"));
    let turn = tokio::spawn(async move {
        app2.post(url)
            .bearer_auth(token)
            .json(&json!({"content": "what is 1+1?"}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = app
        .put_role(
            &admin.access,
            "member",
            json!({"tools": ["calculator"], "models": ["claude"]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let events = parse_sse(&turn.await.unwrap());
    let error = events.iter().find(|e| e.event == "error");
    assert!(
        error.is_some_and(|e| e.data["code"] == "model_not_allowed"),
        "{events:?}"
    );
    assert_eq!(openai.request_count(), 1, "no call after the revocation");
    let totals = app.budget_totals(user.user_id).await;
    assert_eq!((totals.reserved, totals.holds), (0, 0), "{totals:?}");
}
