//! `/v1/chat/completions` without the SDK: the wire details and the hostile cases (bounds,
//! malformed messages, OpenAI's error shape), and access tokens as the bearer.

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

use crate::openai_sdk::{app_on, new_key, MODEL};

async fn complete(app: &TestApp, bearer: &str, body: &Value) -> (u16, Value) {
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(bearer)
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_access_token_works_too_and_the_answer_is_a_chat_completion() {
    let fake = FakeUpstream::start().await;
    let (app, [user]) = app_on(&fake).start_as(["user"]).await;
    fake.push(Reply::text("plain answer"));
    let (status, body) = complete(
        &app,
        &user.access,
        &json!({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "temperature": 0.2, "seed": 7, "user": "someone"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "plain answer");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["agentchat"]["finish_reason"], "stop");
    let total = body["usage"]["total_tokens"].as_u64().unwrap();
    assert!(total > 0);
    assert_eq!(
        total,
        body["usage"]["prompt_tokens"].as_u64().unwrap()
            + body["usage"]["completion_tokens"].as_u64().unwrap()
    );
}

#[tokio::test]
async fn malformed_and_oversized_requests_are_400s_in_openais_shape() {
    let fake = FakeUpstream::start().await;
    let (app, [user]) = app_on(&fake).start_as(["user"]).await;
    let (_, key) = new_key(&app, &user.access, "k").await;
    let user_msg = json!({"role": "user", "content": "hi"});
    let many: Vec<Value> = (0..257).map(|_| user_msg.clone()).collect();
    let tool = |name: &str| json!({"type": "function", "function": {"name": name}});
    let cases = [
        (json!({"messages": [user_msg]}), "invalid_json"),
        (json!({"model": MODEL, "messages": []}), "invalid_value"),
        (json!({"model": MODEL, "messages": many}), "invalid_value"),
        (
            json!({"model": MODEL, "messages": [{"role": "user", "content": "x".repeat(32_001)}]}),
            "string_above_max_length",
        ),
        (
            // Images to a model that reads text only (issue 44).
            json!({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}]}),
            "model_cannot_see_images",
        ),
        (
            json!({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [{"role": "wizard", "content": "hi"}]}),
            "invalid_json",
        ),
        (
            json!({"model": MODEL, "messages": [{"role": "function", "name": "f", "content": "hi"}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg, {"role": "assistant", "content": "prefill"}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [{"role": "system", "content": "only instructions"}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg, {"role": "tool", "tool_call_id": "nope", "content": "r"}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "n": 2}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "tools": [tool("bad name!")]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "tools": [tool("dup"), tool("dup")]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "tools": (0..65).map(|i| tool(&format!("t{i}"))).collect::<Vec<_>>()}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "tools": [{"type": "function", "function": {"name": "big", "parameters": {"type": "object", "description": "x".repeat(17_000)}}}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg], "tools": [{"type": "code_interpreter", "function": {"name": "c"}}]}),
            "invalid_value",
        ),
        (
            json!({"model": MODEL, "messages": [user_msg, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}, user_msg]}),
            "invalid_value",
        ),
    ];
    for (body, code) in cases {
        let (status, answer) = complete(&app, &key, &body).await;
        let shown = body.to_string();
        let shown = &shown[..shown.len().min(200)];
        assert_eq!(status, 400, "{shown}: {answer}");
        assert_eq!(
            answer["error"]["type"], "invalid_request_error",
            "{shown}: {answer}"
        );
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        assert!(answer["error"]["message"].is_string());
    }
    // A whole context larger than the model's window.
    let big: Vec<Value> = (0..8)
        .map(|_| json!({"role": "user", "content": "word ".repeat(6_000)}))
        .collect();
    let (status, answer) = complete(&app, &key, &json!({"model": MODEL, "messages": big})).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["error"]["code"], "context_length_exceeded",
        "{answer}"
    );
    let (status, answer) = complete(
        &app,
        &key,
        &json!({"model": "gpt-unknown", "messages": [user_msg]}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(answer["error"]["code"], "model_not_found");
    assert_eq!(answer["error"]["param"], "model");
    assert_eq!(
        fake.request_count(),
        0,
        "a refused request reached the model"
    );
    let convs: Value = app
        .get_as(&user.access, "/api/conversations")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        convs["items"],
        json!([]),
        "a refused request stored a conversation"
    );
}

/// Both chat routes' streams start with their first event: the keep-alive comment comes only
/// after a period without events (it used to go out with the headers of every stream, one
/// more write and one more wake-up per turn).
#[tokio::test]
async fn streams_begin_with_their_first_event_not_a_keep_alive_comment() {
    let fake = FakeUpstream::start().await;
    let (app, [user]) = app_on(&fake).start_as(["user"]).await;

    fake.push(Reply::text("streamed answer"));
    let r = app
        .client
        .post(app.url("/v1/chat/completions"))
        .bearer_auth(&user.access)
        .json(&json!({"model": MODEL, "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(
        body.starts_with("data: "),
        "the /v1 stream began: {body:.60}"
    );
    assert!(!body.contains(": keep-alive"), "{body}");
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");

    fake.push(Reply::text("native answer"));
    let conversation = app.new_conversation(&user.access).await;
    let r = app.send_message(&user.access, &conversation, "hello").await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(
        !body.starts_with(':'),
        "the native stream began: {body:.60}"
    );
    assert!(!body.contains(": keep-alive"), "{body}");
    assert!(body.contains("event: done"), "{body}");
}
