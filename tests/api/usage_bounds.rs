//! Issue 41 finding 8: provider usage the request could not have produced (10^18 tokens on
//! a priced model) used to overflow the cost column, and the store retried that error every
//! 1.6 s until the turn's deadline while the chat stayed busy. Usage is now cut to what the
//! call could use, a cost saturates, and a store failure no retry mends ends the turn at
//! once (stored as incomplete, with an `error` event).

use std::time::{Duration, Instant};

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel::sql_types::{BigInt, Nullable, Numeric};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// `metered`: 1 USD in and 10 USD out per million tokens, an 8,000-token window and an
/// output cap of 100, on the fake upstream.
async fn metered(fake: &FakeUpstream) -> (TestApp, Session) {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(), "api_key": "sk-oa", "max_retries": 0},
    ]);
    let models = json!([
        {"name": "metered", "provider": "oa", "upstream_model": "gpt-metered", "context_window": 8000,
         "max_output": 100, "prices": [{"currency": "USD", "input": "1", "output": "10"}]},
    ]);
    let (app, [user]) = TestApp::builder()
        .settings(move |s| {
            s.providers = serde_json::from_value(providers).unwrap();
            s.models = serde_json::from_value(models).unwrap();
        })
        .start_as(["fern"])
        .await;
    (app, user)
}

#[derive(QueryableByName, Debug)]
struct UsageRow {
    #[diesel(sql_type = BigInt)]
    input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    cache_read_tokens: i64,
    #[diesel(sql_type = BigInt)]
    cache_write_tokens: i64,
    #[diesel(sql_type = Nullable<Numeric>)]
    cost: Option<Decimal>,
}

async fn usage_rows(app: &TestApp) -> Vec<UsageRow> {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost \
           FROM usage_records ORDER BY id",
    )
    .load(&mut db)
    .await
    .unwrap()
}

/// One message's whole stream, which must end within 10 s.
async fn chat_promptly(app: &TestApp, token: &str, conv: &str) -> (Vec<SseEvent>, Duration) {
    let started = Instant::now();
    let events = tokio::time::timeout(Duration::from_secs(10), app.chat(token, conv, "hi"))
        .await
        .expect("the turn did not end within 10 s");
    (events, started.elapsed())
}

fn messages(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn absurd_usage_is_cut_to_what_the_call_could_use_and_the_turn_ends_stored() {
    let fake = FakeUpstream::start().await;
    let (app, user) = metered(&fake).await;
    let conv = app
        .create_conversation_with(&user.access, json!({"model": "metered"}))
        .await;
    let huge = 1_000_000_000_000_000_000u64;
    fake.push(Reply::Text {
        text: "an answer".into(),
        usage: Some(Usage {
            input_tokens: huge,
            output_tokens: huge,
            cache_read_tokens: huge,
            cache_write_tokens: huge,
        }),
    });
    let (events, took) = chat_promptly(&app, &user.access, &conv).await;
    let last = events.last().unwrap();
    assert_eq!(
        last.event,
        "done",
        "{:?} after {took:?}",
        event_names(&events)
    );
    let rows = usage_rows(&app).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    // Input within the window (all of it from the cache, as reported), output within the cap.
    assert_eq!(
        (row.input_tokens, row.output_tokens),
        (8_000, 100),
        "{row:?}"
    );
    assert_eq!((row.cache_read_tokens, row.cache_write_tokens), (8_000, 0));
    // 8,000 cached tokens at 1 USD/M and 100 out at 10 USD/M.
    assert_eq!(row.cost, Some("0.009".parse().unwrap()), "{row:?}");
    let stored = app.conversation(&user.access, &conv).await;
    let answer = messages(&stored).last().cloned().unwrap_or_default();
    assert_eq!(answer["content"], "an answer", "{stored}");
    assert_eq!(answer["status"], "complete", "{answer}");

    // The chat is not busy: the next message runs at once.
    fake.push(Reply::Text {
        text: "again".into(),
        usage: Some(Usage::new(10, 2)),
    });
    let (events, _) = chat_promptly(&app, &user.access, &conv).await;
    assert_eq!(events.last().unwrap().event, "done");
}

#[tokio::test]
async fn a_store_error_no_retry_mends_ends_the_turn_at_once_as_incomplete() {
    let fake = FakeUpstream::start().await;
    let (app, user) = metered(&fake).await;
    let conv = app
        .create_conversation_with(&user.access, json!({"model": "metered"}))
        .await;
    // A usage row of 4,321 input tokens fails its insert with an error of its own (as an
    // overflow did): the same every time, whatever the retry.
    let mut db = app.db().await;
    diesel::sql_query(
        "CREATE FUNCTION refuse_usage() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.input_tokens = 4321 THEN \
           RAISE EXCEPTION 'numeric field overflow' USING ERRCODE = '22003'; \
         END IF; RETURN NEW; END $$",
    )
    .execute(&mut db)
    .await
    .unwrap();
    diesel::sql_query(
        "CREATE TRIGGER refuse_usage BEFORE INSERT ON usage_records \
         FOR EACH ROW EXECUTE FUNCTION refuse_usage()",
    )
    .execute(&mut db)
    .await
    .unwrap();
    fake.push(Reply::Text {
        text: "lost in the ledger".into(),
        usage: Some(Usage::new(4_321, 7)),
    });
    let (events, took) = chat_promptly(&app, &user.access, &conv).await;
    let last = events.last().unwrap();
    assert_eq!(last.event, "error", "{:?}", event_names(&events));
    assert_eq!(last.data["code"], "store_failed", "{:?}", last.data);
    assert!(took < Duration::from_secs(5), "ended after {took:?}");
    let stored = app.conversation(&user.access, &conv).await;
    let answer = messages(&stored).last().cloned().unwrap_or_default();
    assert_eq!(answer["content"], "lost in the ledger", "{stored}");
    assert_eq!(answer["status"], "incomplete", "{answer}");
    assert!(usage_rows(&app).await.is_empty());

    // Released: the next message runs at once.
    fake.push(Reply::Text {
        text: "again".into(),
        usage: Some(Usage::new(10, 2)),
    });
    let (events, _) = chat_promptly(&app, &user.access, &conv).await;
    assert_eq!(events.last().unwrap().event, "done");
    assert_eq!(usage_rows(&app).await.len(), 1);
}
