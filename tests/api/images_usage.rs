//! Image token estimates against what the providers say (`fixtures/image_usage.json`): the
//! estimator gives each published worked example, and an image turn reserves at least the
//! input tokens the provider reports for the image (never less), then is charged what the
//! provider reports.

use agentchat::config::ProviderKind;
use agentchat::llm::image_part::{anthropic_tokens, estimate, openai_tokens};
use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::images::{seeing_catalogue, send_with, upload_png};

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/image_usage.json")).unwrap()
}

fn dims(v: &Value) -> (u32, u32) {
    let n = |k: &str| u32::try_from(v[k].as_u64().unwrap()).unwrap();
    (n("width"), n("height"))
}

#[test]
fn the_estimator_gives_each_published_example() {
    let f = fixture();
    let openai = f["published"]["openai"]["examples"].as_array().unwrap();
    let anthropic = f["published"]["anthropic"]["examples"].as_array().unwrap();
    assert!(openai.len() >= 3 && anthropic.len() >= 2);
    for e in openai {
        let (w, h) = dims(e);
        let tokens = e["tokens"].as_u64().unwrap();
        assert_eq!(estimate(ProviderKind::Openai, w, h), openai_tokens(w, h));
        match e["detail"].as_str().unwrap() {
            "high" => assert_eq!(openai_tokens(w, h), tokens, "{e}"),
            // Images go without a `detail` (the provider's `auto`): the high-detail count,
            // which the estimate is, bounds what a low-detail reading costs.
            _ => assert!(openai_tokens(w, h) >= tokens, "{e}"),
        }
    }
    for e in anthropic {
        let (w, h) = dims(e);
        let tokens = e["tokens"].as_u64().unwrap();
        assert_eq!(anthropic_tokens(w, h), tokens, "{e}");
        assert_eq!(estimate(ProviderKind::Anthropic, w, h), tokens, "{e}");
    }
}

/// The reported input and output tokens of a usage-shaped response.
fn reported(response: &Value) -> (u64, u64) {
    let u = &response["usage"];
    let input = u["prompt_tokens"].as_u64().or(u["input_tokens"].as_u64());
    let output = u["completion_tokens"]
        .as_u64()
        .or(u["output_tokens"].as_u64());
    (input.unwrap(), output.unwrap())
}

/// What the start says a refused turn needed, in tokens (the reservation it would make).
async fn needed(app: &TestApp, token: &str, model: &str, file: &str) -> i64 {
    let conv = app
        .create_conversation_with(token, json!({"model": model}))
        .await;
    let r = send_with(app, token, &conv, "What is in this image?", &[file]).await;
    let body = expect_error(r, 429, "budget_exhausted").await;
    body["error"]["details"]["needed"].as_i64().unwrap()
}

#[tokio::test]
async fn an_image_turn_reserves_at_least_the_reported_image_tokens_and_settles_on_the_report() {
    let fake = FakeUpstream::start().await;
    let (app, [admin, u]) = TestApp::builder()
        .settings(seeing_catalogue(&fake))
        .start_as(["boss", "measured"])
        .await;
    for case in fixture()["usage"].as_array().unwrap() {
        let (model, name) = match case["provider"].as_str().unwrap() {
            "openai" => ("eyes", "oa"),
            _ => ("claude", "an"),
        };
        let (w, h) = dims(&case["image"]);
        let (text_in, _) = reported(&case["text_only"]);
        let (image_in, image_out) = reported(&case["with_image"]);
        let image_share = i64::try_from(image_in - text_in).unwrap();
        // The same message with an image, and with a text file of the same name length and
        // size instead: what they need differs by the image alone.
        let png = format!("{name}.png");
        let stored = upload_png(&app, &u.access, &png, w, h).await;
        let txt = format!("{name}.txt");
        app.upload(&u.access, &txt, &"x".repeat(stored.len())).await;
        let spent = app.budget_totals(u.user_id).await.spent;
        app.set_budget(&admin.access, u.user_id, Some(spent + 100))
            .await;
        let text_need = needed(&app, &u.access, model, &txt).await;
        let image_need = needed(&app, &u.access, model, &png).await;
        assert!(
            image_need - text_need >= image_share,
            "{model}: reserved {} for the image, the provider reports {image_share}",
            image_need - text_need
        );

        // With room, the turn runs and is charged what the provider reports.
        app.set_budget(&admin.access, u.user_id, Some(spent + 1_000_000))
            .await;
        fake.push(Reply::Text {
            text: "a green square".into(),
            usage: Some(Usage::new(image_in, image_out)),
        });
        let before = app.budget_totals(u.user_id).await;
        let conv = app
            .create_conversation_with(&u.access, json!({"model": model}))
            .await;
        let r = send_with(&app, &u.access, &conv, "What is in this image?", &[&png]).await;
        assert_eq!(r.status(), 200);
        let _ = r.text().await;
        let after = app.budget_totals(u.user_id).await;
        let charged = i64::try_from(image_in + image_out).unwrap();
        assert_eq!(after.ledger - before.ledger, charged, "{model}");
        assert_eq!(after.spent - before.spent, charged, "{model}");
        assert_eq!((after.reserved, after.holds), (0, 0), "{model}");
        let messages = app.conversation(&u.access, &conv).await["messages"].clone();
        let answer = messages.as_array().unwrap().last().unwrap().clone();
        assert_eq!(answer["input_tokens"], json!(image_in), "{answer}");
    }
    assert_eq!(fake.request_count(), 2, "a refused turn reached the model");
}
