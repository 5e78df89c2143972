//! Money budgets with images (issue 44): an image's tokens, estimated by its provider's rule
//! (OpenAI's tiles, Anthropic's w × h / 750), are part of what a turn reserves, so storms of
//! concurrent image turns never overshoot the money limit. While the provider reports no
//! more input than the reservation's margin allows, every call is charged exactly its cost;
//! beyond it, a call is charged its hold and the limit still holds.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::RunQueryDsl;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::images::{b64, upload_png};
use crate::money_budget::{count_admitted, dec, money_totals, set_money, MoneyTotals};

/// The money each member may spend: a dozen image turns' worst case.
const LIMIT: &str = "0.05";

/// Output tokens each fake answer reports (the cap sent is always at least 64).
const OUTPUT: u64 = 20;

/// One model per provider that reads images, both at 2 USD in and 10 USD out per million
/// tokens with an output cap of 100.
fn priced_eyes(fake: &FakeUpstream) -> impl Fn(&mut agentchat::config::Settings) + Clone {
    let providers = json!([
        {"name": "oa", "kind": "openai", "base_url": fake.base_url_openai(), "max_retries": 0},
        {"name": "an", "kind": "anthropic", "base_url": fake.base_url_anthropic(), "max_retries": 0},
    ]);
    let price = json!([{"currency": "USD", "input": "2", "output": "10"}]);
    let models = json!([
        {"name": "eyes", "provider": "oa", "upstream_model": "gpt-4o", "input": ["text", "image"],
         "context_window": 16000, "max_output": 100, "prices": price},
        {"name": "claude", "provider": "an", "upstream_model": "claude-sonnet-4-5",
         "input": ["text", "image"], "context_window": 16000, "max_output": 100, "prices": price},
    ]);
    move |s| {
        s.providers = serde_json::from_value(providers.clone()).unwrap();
        s.models = serde_json::from_value(models.clone()).unwrap();
        s.llm.model = "eyes".into();
        s.database.pool_size = 16;
        s.database.acquire_timeout = Duration::from_secs(20);
    }
}

/// The image every turn attaches: 1100 × 600 is 3 × 2 tiles for OpenAI (1105 tokens) and
/// 880 tokens by Anthropic's rule.
const IMAGE: (u32, u32) = (1100, 600);

/// How many input tokens the fake provider reports against our estimate `e` of a turn's
/// input (text and image).
#[derive(Debug, Clone, Copy)]
enum Reported {
    /// Exactly our estimate.
    Estimate,
    /// Our estimate plus the whole margin the reservation adds (`budget::with_margin`).
    AtMargin,
    /// Twice our estimate: more than any reservation held.
    Double,
}

impl Reported {
    fn input(self, e: u64) -> u64 {
        match self {
            Self::Estimate => e,
            Self::AtMargin => u64::try_from(agentchat::budget::with_margin(e)).unwrap(),
            Self::Double => 2 * e,
        }
    }
}

/// What a call reporting `input` tokens in and [`OUTPUT`] out costs.
fn cost(input: u64) -> Decimal {
    (Decimal::from(input) * dec("2") + Decimal::from(OUTPUT) * dec("10")) / dec("1000000")
}

async fn send_image(url: &str, client: &reqwest::Client, token: &str, conv: &str) -> (u16, Value) {
    let r = client
        .post(format!("{url}/api/conversations/{conv}/messages"))
        .bearer_auth(token)
        .header("accept", "application/json")
        .json(&json!({"content": "What is in this picture?", "attachments": ["pic.png"]}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[derive(diesel::QueryableByName)]
struct Inputs {
    #[diesel(sql_type = diesel::sql_types::Array<diesel::sql_types::BigInt>)]
    inputs: Vec<i64>,
}

/// The input tokens of each of `user`'s recorded calls.
async fn recorded_inputs(app: &TestApp, user: uuid::Uuid) -> Vec<i64> {
    let mut db = app.db().await;
    diesel::sql_query(
        "SELECT COALESCE(array_agg(input_tokens ORDER BY id), '{}') AS inputs \
         FROM usage_records WHERE user_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(user)
    .get_result::<Inputs>(&mut db)
    .await
    .unwrap()
    .inputs
}

/// Our estimate of an image turn on `model`: one turn whose answer reports no usage is
/// charged our own count of its input (checked to hold the image's `image_tokens`).
async fn probe_estimate(
    app: &TestApp,
    fake: &FakeUpstream,
    s: &Session,
    model: &str,
    image_tokens: u64,
) -> u64 {
    fake.set_default(None);
    fake.push(Reply::text("a green field"));
    let probe = app
        .create_conversation_with(&s.access, json!({"model": model}))
        .await;
    let (status, body) = send_image(&app.address, &app.client, &s.access, &probe).await;
    assert_eq!(
        (status, &body["finish_reason"]),
        (200, &json!("stop")),
        "{body}"
    );
    let inputs = recorded_inputs(app, s.user_id).await;
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let estimate = u64::try_from(inputs[0]).unwrap();
    assert!(
        (image_tokens..image_tokens + 400).contains(&estimate),
        "{model}: the estimate {estimate} counts the image's {image_tokens} tokens and a short text"
    );
    estimate
}

/// Sends an image turn in each of `convs` at once; how many were admitted (the others must
/// be refused cleanly by the money budget).
async fn fire(app: &TestApp, token: &str, convs: Vec<String>) -> usize {
    let handles: Vec<_> = convs
        .into_iter()
        .map(|conv| {
            let (url, client, token) = (app.address.clone(), app.client.clone(), token.to_owned());
            tokio::spawn(async move { send_image(&url, &client, &token, &conv).await })
        })
        .collect();
    count_admitted(handles).await
}

/// A new member uploads the image, [`probe_estimate`]s an image turn on `model`, then fires
/// `n` image turns at once, each answered reporting `reported` input. Checks the money
/// invariants and returns how many turns were admitted.
async fn image_storm(
    app: &TestApp,
    fake: &FakeUpstream,
    user: &str,
    (model, image_tokens): (&str, u64),
    reported: Reported,
    n: usize,
) -> usize {
    let s = app.signed_up(user).await;
    let stored = upload_png(app, &s.access, "pic.png", IMAGE.0, IMAGE.1).await;
    let image = b64(&stored);
    let estimate = probe_estimate(app, fake, &s, model, image_tokens).await;

    let input = reported.input(estimate);
    fake.set_default(Some(
        Reply::Text {
            text: "a green field".into(),
            usage: Some(Usage::new(input, OUTPUT)),
        }
        .delay_first_byte(Duration::from_millis(200)),
    ));
    let before = money_totals(app, s.user_id).await;
    let mut convs = Vec::new();
    for _ in 0..n {
        convs.push(
            app.create_conversation_with(&s.access, json!({"model": model}))
                .await,
        );
    }
    let calls_before = fake.request_count();
    let admitted = fire(app, &s.access, convs).await;

    let t: MoneyTotals = money_totals(app, s.user_id).await;
    let context = format!("{model} {reported:?}: estimate {estimate}, reported {input}, admitted {admitted} of {n}, {t:?}");
    let sent = fake.requests();
    assert_eq!(
        sent.len() - calls_before,
        admitted,
        "upstream calls = admissions; {context}"
    );
    assert!(
        sent[calls_before..]
            .iter()
            .all(|r| r["body"].to_string().contains(&image)),
        "every admitted turn sent the image; {context}"
    );
    assert!(
        t.spent <= dec(LIMIT),
        "overshoot: spent {} > limit {LIMIT}; {context}",
        t.spent
    );
    assert_eq!(
        (t.reserved, t.holds),
        (Decimal::ZERO, 0),
        "money holds leaked; {context}"
    );
    // A turn holds at most its worst case (input with the margin, the full output cap):
    // every turn is admitted while that much is left.
    let margin = u64::try_from(agentchat::budget::with_margin(estimate)).unwrap();
    let worst = (Decimal::from(margin) * dec("2") + dec("1000")) / dec("1000000");
    let room = ((dec(LIMIT) - before.spent) / worst).floor();
    assert!(
        Decimal::from(admitted) >= room && admitted < n,
        "at least {room} admitted; {context}"
    );
    let inputs = recorded_inputs(app, s.user_id).await;
    assert_eq!(inputs.len(), 1 + admitted, "{context}");
    assert!(
        inputs[1..]
            .iter()
            .all(|&i| i == i64::try_from(input).unwrap()),
        "{context}"
    );

    let spent = t.spent - before.spent;
    let ledger = t.ledger - before.ledger;
    let each = cost(input) * Decimal::from(admitted);
    assert_eq!(
        ledger, each,
        "the ledger records every call's real cost; {context}"
    );
    match reported {
        // Within the margin the hold covered the call: charged exactly, once.
        Reported::Estimate | Reported::AtMargin => {
            assert_eq!(
                spent, each,
                "each call charged its cost, exactly; {context}"
            );
            assert_eq!(
                t.spent, t.ledger,
                "the budget and the ledger agree; {context}"
            );
        }
        // Beyond it each call is charged its hold, less than it cost: the limit stays hard.
        Reported::Double => {
            assert!(spent < each && spent > Decimal::ZERO, "{context}");
        }
    }
    admitted
}

#[tokio::test]
async fn image_turns_reported_up_to_the_reservations_margin_are_charged_exactly_and_never_overshoot(
) {
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder()
        .settings(priced_eyes(&fake))
        .start()
        .await;
    let admin = app.signed_up("boss").await;
    let (status, role) = set_money(&app, &admin.access, "member", json!(LIMIT)).await;
    assert_eq!(status, 200, "{role}");
    let storms = [
        (("eyes", 1105), Reported::Estimate),
        (("claude", 880), Reported::Estimate),
        (("eyes", 1105), Reported::AtMargin),
        (("claude", 880), Reported::AtMargin),
    ];
    for (i, (model, reported)) in storms.into_iter().enumerate() {
        image_storm(&app, &fake, &format!("viewer{i}"), model, reported, 40).await;
    }
}

#[tokio::test]
async fn image_turns_reported_beyond_the_reservation_are_charged_their_hold_and_never_overshoot() {
    let fake = FakeUpstream::start().await;
    let app = TestApp::builder()
        .settings(priced_eyes(&fake))
        .start()
        .await;
    let admin = app.signed_up("boss").await;
    let (status, role) = set_money(&app, &admin.access, "member", json!(LIMIT)).await;
    assert_eq!(status, 200, "{role}");
    for (i, model) in [("eyes", 1105), ("claude", 880)].into_iter().enumerate() {
        image_storm(
            &app,
            &fake,
            &format!("glutton{i}"),
            model,
            Reported::Double,
            40,
        )
        .await;
    }
}
