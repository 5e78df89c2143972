//! Budgets in money (issue 30): a role's `budget_amount` in its currency, reserved at the
//! model's price for the worst case and settled to the real cost, with the token budget's
//! guarantees: no overshoot under 200 concurrent turns across two processes, nothing held
//! afterwards, unpriced models refused, the output cap cut to what the money pays for.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// `metered` (1 USD in, 10 USD out per million tokens, output cap 100) and `free` (no price)
/// on the fake upstream.
fn catalogue_json(fake: &FakeUpstream) -> (Value, Value) {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(), "api_key": "sk-oa", "max_retries": 0},
    ]);
    let models = json!([
        {"name": "metered", "provider": "oa", "upstream_model": "gpt-metered", "context_window": 8000, "max_output": 100,
         "prices": [{"currency": "USD", "input": "1", "output": "10"}]},
        {"name": "free", "provider": "oa", "upstream_model": "llama-free", "max_output": 100},
    ]);
    (providers, models)
}

fn metered(fake: &FakeUpstream) -> AppBuilder<'_> {
    let (providers, models) = catalogue_json(fake);
    TestApp::builder().settings(move |s| {
        s.providers = serde_json::from_value(providers).unwrap();
        s.models = serde_json::from_value(models).unwrap();
        s.database.pool_size = 16;
        s.database.acquire_timeout = Duration::from_secs(20);
    })
}

/// What each fake turn reports: 40 in, 20 out = 0.00004 + 0.0002 USD.
const TURN_COST: &str = "0.00024";

pub(crate) fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn answer(delay_ms: u64) -> agentchat_tests::fake_upstream::Scripted {
    Reply::Text {
        text: "ok".into(),
        usage: Some(Usage::new(40, 20)),
    }
    .delay_first_byte(Duration::from_millis(delay_ms))
}

pub(crate) async fn set_money(
    app: &TestApp,
    admin: &str,
    role: &str,
    amount: Value,
) -> (u16, Value) {
    let r = app
        .put_role(
            admin,
            role,
            json!({"tools": [], "budget_amount": amount, "budget_currency": "USD"}),
        )
        .await;
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[derive(diesel::QueryableByName, Debug)]
pub(crate) struct MoneyTotals {
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    pub spent: Decimal,
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    pub reserved: Decimal,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub holds: i64,
    #[diesel(sql_type = diesel::sql_types::Numeric)]
    pub ledger: Decimal,
}

pub(crate) async fn money_totals(app: &TestApp, user: uuid::Uuid) -> MoneyTotals {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT COALESCE((SELECT sum(spent) FROM money_periods WHERE user_id = $1), 0) AS spent, \
                COALESCE((SELECT sum(reserved) FROM money_periods WHERE user_id = $1), 0) AS reserved, \
                (SELECT count(*) FROM money_holds WHERE user_id = $1)::BIGINT AS holds, \
                COALESCE((SELECT sum(cost) FROM usage_records WHERE user_id = $1), 0) AS ledger",
    )
    .bind::<diesel::sql_types::Uuid, _>(user)
    .get_result(&mut db)
    .await
    .unwrap()
}

/// Waits for a storm's turns: how many were admitted. Each must have ended with `stop` or
/// been refused cleanly by the budget (429 `budget_exhausted` or `budget_in_use`).
pub(crate) async fn count_admitted(handles: Vec<tokio::task::JoinHandle<(u16, Value)>>) -> usize {
    let mut admitted = 0usize;
    for h in handles {
        let (status, body) = h.await.unwrap();
        match status {
            200 => {
                admitted += 1;
                assert_eq!(body["finish_reason"], "stop", "{body}");
            }
            429 => {
                let code = body["error"]["code"].as_str().unwrap_or_default();
                assert!(
                    code == "budget_exhausted" || code == "budget_in_use",
                    "{body}"
                );
            }
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    admitted
}

async fn send(url: &str, client: &reqwest::Client, token: &str, conv: &str) -> (u16, Value) {
    let r = client
        .post(format!("{url}/api/conversations/{conv}/messages"))
        .bearer_auth(token)
        .header("accept", "application/json")
        .json(&json!({"content": "hi"}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// `n` turns of one new user at once, spread over `urls`; checks the money invariants and
/// returns how many were admitted.
async fn storm(
    home: &TestApp,
    urls: &[String],
    fake: &FakeUpstream,
    user: &str,
    n: usize,
) -> usize {
    let s = home.signed_up(user).await;
    let mut convs = Vec::new();
    for _ in 0..n {
        convs.push(home.new_conversation(&s.access).await);
    }
    let calls_before = fake.request_count();
    let handles: Vec<_> = convs
        .into_iter()
        .enumerate()
        .map(|(i, conv)| {
            let (url, client, token) = (
                urls[i % urls.len()].clone(),
                home.client.clone(),
                s.access.clone(),
            );
            tokio::spawn(async move { send(&url, &client, &token, &conv).await })
        })
        .collect();
    let admitted = count_admitted(handles).await;
    let t = money_totals(home, s.user_id).await;
    assert_eq!(
        fake.request_count() - calls_before,
        admitted,
        "upstream calls = admissions"
    );
    assert!(t.spent <= dec("0.02"), "spent {} > limit 0.02", t.spent);
    assert_eq!(
        t.spent,
        dec(TURN_COST) * Decimal::from(admitted),
        "each call charged once, exactly"
    );
    assert_eq!(t.spent, t.ledger, "the budget and the usage ledger agree");
    assert_eq!(
        (t.reserved, t.holds),
        (Decimal::ZERO, 0),
        "money holds leaked"
    );
    assert!(admitted >= 1 && admitted < n, "admitted {admitted} of {n}");
    admitted
}

#[tokio::test]
async fn two_hundred_concurrent_turns_on_two_processes_never_overshoot_a_money_budget() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(answer(300)));
    let (app, [admin]) = metered(&fake).start_as(["boss"]).await;
    // Each call holds up to ~0.00105 USD (input + 100 output at 10/M), needs ~0.0007.
    let (status, role) = set_money(&app, &admin.access, "member", json!("0.02")).await;
    assert_eq!(status, 200, "{role}");
    assert_eq!(role["budget_amount"], "0.02");
    assert_eq!(role["budget_currency"], "USD");

    let (providers, models) = catalogue_json(&fake);
    let child = crate::budget::start_child_with(
        &app.database_url,
        &fake.base_url_openai(),
        &[
            ("AGENTCHAT_PROVIDERS", &providers.to_string()),
            ("AGENTCHAT_MODELS", &models.to_string()),
        ],
    );
    let urls = [app.address.clone(), child.address.clone()];
    for round in 0..2 {
        storm(&app, &urls, &fake, &format!("spender{round}"), 200).await;
    }
    // A user well inside the budget sees it in `GET /api/me`.
    let s = app.signed_up("reader").await;
    let conv = app.new_conversation(&s.access).await;
    assert_eq!(
        send(&app.address, &app.client, &s.access, &conv).await.0,
        200
    );
    let me: Value = app
        .get_as(&s.access, "/api/me")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let money = &me["budget"]["money"];
    assert_eq!(money["currency"], "USD", "{me}");
    assert_eq!(money["limit"], "0.02");
    assert_eq!(dec(money["used"].as_str().unwrap()), dec(TURN_COST));
    assert_eq!(dec(money["reserved"].as_str().unwrap()), Decimal::ZERO);
}

#[tokio::test]
async fn a_money_budget_refuses_unpriced_models_caps_output_and_says_what_is_left() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(answer(0)));
    let (app, [admin, user]) = metered(&fake).start_as(["boss", "ursula"]).await;

    // Without a money budget the unpriced model answers.
    let free = app
        .create_conversation_with(&user.access, json!({"model": "free"}))
        .await;
    assert_eq!(
        send(&app.address, &app.client, &user.access, &free).await.0,
        200
    );

    // Validation: exact decimals only, a currency the catalogue prices in.
    for (amount, currency, status, code) in [
        (json!("abc"), json!("USD"), 400, "invalid_budget"),
        (json!("-1"), json!("USD"), 400, "invalid_budget"),
        (json!("0.0000000001"), json!("USD"), 400, "invalid_budget"),
        (json!(12.5), json!("USD"), 400, "invalid_body"),
        (json!("5"), json!("usd"), 400, "invalid_budget"),
        (json!("5"), json!("EUR"), 422, "currency_mismatch"),
    ] {
        let r = app
            .put_role(
                &admin.access,
                "member",
                json!({"tools": [], "budget_amount": amount, "budget_currency": currency}),
            )
            .await;
        let got = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(got, status, "{amount} {currency}: {body}");
        if code != "invalid_body" {
            assert_eq!(body["error"]["code"], code, "{body}");
        }
    }

    // 0.0008 USD: the input (~0.00003) plus at most ~77 output tokens at 10/M, less than
    // the model's cap of 100.
    assert_eq!(
        set_money(&app, &admin.access, "member", json!("0.0008"))
            .await
            .0,
        200
    );
    let calls = fake.request_count();
    let (status, body) = send(&app.address, &app.client, &user.access, &free).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "model_unpriced", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`free`"),
        "{body}"
    );
    assert_eq!(
        fake.request_count(),
        calls,
        "no upstream call for a refused model"
    );

    let paid = app
        .create_conversation_with(&user.access, json!({"model": "metered"}))
        .await;
    let (status, body) = send(&app.address, &app.client, &user.access, &paid).await;
    assert_eq!(status, 200, "{body}");
    let sent = fake.requests().last().cloned().unwrap();
    let max_tokens = sent["body"]["max_tokens"]
        .as_i64()
        .or_else(|| sent["body"]["max_completion_tokens"].as_i64())
        .unwrap();
    assert!(
        (64..100).contains(&max_tokens),
        "the money left pays for fewer than 100 output tokens: {max_tokens}"
    );
    assert_eq!(sent["body"]["model"], "gpt-metered");

    // 0.00056 left: less than the next call's least useful cost (input + 64 output).
    let (status, body) = send(&app.address, &app.client, &user.access, &paid).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "budget_exhausted");
    let details = &body["error"]["details"];
    assert_eq!(details["currency"], "USD", "{body}");
    assert_eq!(details["limit"], "0.0008");
    assert_eq!(dec(details["remaining"].as_str().unwrap()), dec("0.00056"));
    assert!(
        body["error"]["message"].as_str().unwrap().contains("USD"),
        "{body}"
    );

    // Clearing the money budget (null) lets the unpriced model answer again.
    let (status, role) = set_money(&app, &admin.access, "member", Value::Null).await;
    assert_eq!(status, 200, "{role}");
    assert_eq!(role["budget_amount"], Value::Null);
    assert_eq!(
        send(&app.address, &app.client, &user.access, &free).await.0,
        200
    );
    let t = money_totals(&app, user.user_id).await;
    assert_eq!((t.reserved, t.holds), (Decimal::ZERO, 0));
}
