//! Who answered after a fallback (issue 42.3): the conversation JSON, both exports and the
//! admin usage report name the catalogue model that answered (not its upstream id) and, for
//! a fallback, the model it stood in for and why.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::model_fallback::{catalogue, claude_answers};

#[tokio::test]
async fn a_fallback_answer_names_its_model_and_whom_it_stood_in_for() {
    let (openai, anthropic) = (FakeUpstream::start().await, FakeUpstream::start().await);
    openai.set_default(Some(Reply::error(503, "overloaded").scripted()));
    claude_answers(&anthropic);
    let app = TestApp::builder()
        .settings(catalogue(&openai, &anthropic))
        .start()
        .await;
    let admin = app.signed_up("ada").await;
    let user = app.signed_up("fern").await;
    let conv = app
        .create_conversation_with(&user.access, json!({"model": "gpt"}))
        .await;
    let events = app.chat(&user.access, &conv, "hello").await;
    assert_eq!(streamed_text(&events), "from claude");
    let fallback = json!({"from": "gpt", "reason": "upstream_error"});

    // The conversation JSON.
    let stored = app.conversation(&user.access, &conv).await;
    let answer = assistant(&stored);
    assert_eq!(answer["model"], "claude", "{answer}");
    assert_eq!(answer["fallback"], fallback, "{answer}");

    // The JSON export.
    let r = app
        .get_as(
            &user.access,
            &format!("/api/conversations/{conv}/export?format=json"),
        )
        .send()
        .await
        .unwrap();
    let doc: Value = r.json().await.unwrap();
    let answer = assistant(&doc);
    assert_eq!(
        (&answer["model"], &answer["fallback"]),
        (&json!("claude"), &fallback),
        "{doc}"
    );

    // The Markdown export.
    let md = app
        .get_as(&user.access, &format!("/api/conversations/{conv}/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        md.contains("· claude _(fallback from gpt: upstream_error)_"),
        "{md}"
    );

    // The admin usage report: a fallback line, and the model's count of stood-in calls.
    let report: Value = app
        .get_as(&admin.access, "/api/admin/usage?period=total")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        report["fallbacks"],
        json!([{"model": "claude", "from": "gpt", "reason": "upstream_error",
                "calls": 1, "input_tokens": 30, "output_tokens": 5}]),
        "{report}"
    );
    let claude = report["by_model"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "claude")
        .unwrap();
    assert_eq!(claude["fallback_calls"], 1, "{report}");
}

/// The one assistant message of a conversation document.
fn assistant(doc: &Value) -> &Value {
    let answers: Vec<&Value> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{doc}");
    answers[0]
}
