//! The agent loop through the real server: SSE events and what is stored in Postgres.

use std::time::Duration;

use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::{json, Value};

/// The fake model, retried once after 10 ms (a 429 is retried).
fn openai_app(fake: &FakeUpstream) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .model("fake-model")
        .settings(|s| {
            s.llm.retry_base_delay = Duration::from_millis(10);
            s.llm.max_retries = 1;
            s.llm.idle_timeout = Duration::from_secs(30);
        })
}

fn usage(i: u64, o: u64) -> Option<Usage> {
    Some(Usage::new(i, o))
}

fn roles(conv: &Value) -> Vec<String> {
    conv["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn demo_model_answers_what_time_it_is_through_the_real_tool() {
    let (app, [s]) = TestApp::builder().start_as(["demo_user"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "What time is it?").await;
    assert_eq!(
        event_names(&events),
        [
            "turn_start",
            "usage",
            "tool_call",
            "tool_result",
            "text_delta",
            "usage",
            "done"
        ]
    );
    let call = events.iter().find(|e| e.event == "tool_call").unwrap();
    assert_eq!(call.data["name"], "current_time");
    let result = events.iter().find(|e| e.event == "tool_result").unwrap();
    assert_eq!(result.data["success"], true);
    assert!(result.data["data"]["iso8601"].is_string());
    assert!(streamed_text(&events).starts_with("[demo] "));
    assert_eq!(events.last().unwrap().data["finish_reason"], "stop");

    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(roles(&stored), ["user", "assistant", "tool", "assistant"]);
    let msgs = stored["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["tool_calls"][0]["name"], "current_time");
    assert_eq!(msgs[2]["tool_call_id"], msgs[1]["tool_calls"][0]["id"]);
    assert_eq!(msgs[3]["content"].as_str().unwrap(), streamed_text(&events));
    assert_eq!(events.last().unwrap().data["message_id"], msgs[3]["id"]);
    assert!(msgs.iter().all(|m| m["status"] == "complete"));
}

#[tokio::test]
async fn openai_tool_call_round_trip_with_split_arguments() {
    let fake = FakeUpstream::start().await;
    fake.push(
        Reply::ToolCalls {
            calls: vec![(
                "call_1".into(),
                "calculator".into(),
                r#"{"expression": "(2+3)*4"}"#.into(),
            )],
            usage: usage(50, 10),
        }
        .split_args_into(12),
    );
    fake.push(Reply::Text {
        text: "The answer is 20.".into(),
        usage: usage(80, 6),
    });
    let (app, [s]) = openai_app(&fake).start_as(["oai"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "compute (2+3)*4").await;
    assert_eq!(
        event_names(&events),
        [
            "turn_start",
            "usage",
            "tool_call",
            "tool_result",
            "text_delta",
            "usage",
            "done"
        ]
    );
    let result = events.iter().find(|e| e.event == "tool_result").unwrap();
    assert_eq!(result.data["id"], "call_1");
    assert_eq!(result.data["data"]["result"], 20);
    assert_eq!(streamed_text(&events), "The answer is 20.");

    // The second upstream request carries the call and its result bound by id.
    let second = &fake.requests()[1]["body"];
    let msgs = second["messages"].as_array().unwrap();
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(tool["content"]
        .as_str()
        .unwrap()
        .contains("\"success\":true"));
    assert_eq!(second["tools"][0]["type"], "function");

    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(roles(&stored), ["user", "assistant", "tool", "assistant"]);
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m[1]["input_tokens"], 50);
    assert_eq!(m[1]["output_tokens"], 10);
    assert_eq!(m[1]["tool_calls"][0]["arguments"]["expression"], "(2+3)*4");
    assert_eq!(m[3]["output_tokens"], 6);
}

#[tokio::test]
async fn parallel_tool_calls_are_bound_by_id_in_call_order() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![
            (
                "call_a".into(),
                "current_time".into(),
                r#"{"timezone": "Europe/Paris"}"#.into(),
            ),
            (
                "call_b".into(),
                "calculator".into(),
                r#"{"expression": "6*7"}"#.into(),
            ),
        ],
        usage: None,
    });
    fake.push(Reply::text("done"));
    let (app, [s]) = openai_app(&fake).start_as(["par"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "both").await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "tool_result")
        .map(|e| &e.data)
        .collect();
    assert_eq!(results[0]["id"], "call_a");
    assert_eq!(results[0]["data"]["timezone"], "Europe/Paris");
    assert_eq!(results[1]["id"], "call_b");
    assert_eq!(results[1]["data"]["result"], 42);
    let stored = app.conversation(&s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m[2]["tool_call_id"], "call_a");
    assert_eq!(m[3]["tool_call_id"], "call_b");
    // Without upstream usage the local count is stored.
    assert!(m[1]["output_tokens"].as_i64().unwrap() > 0);
}

#[tokio::test]
async fn schema_invalid_arguments_go_back_to_the_model_which_corrects_itself() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::tool_call("c1", "calculator", r#"{"expr": "1+1"}"#));
    fake.push(Reply::tool_call(
        "c2",
        "calculator",
        r#"{"expression": "1+1"}"#,
    ));
    fake.push(Reply::text("2"));
    let (app, [s]) = openai_app(&fake).start_as(["fixer"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "1+1").await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "tool_result")
        .map(|e| &e.data)
        .collect();
    assert_eq!(results[0]["success"], false);
    let err = results[0]["error"].as_str().unwrap();
    assert!(err.contains("expression"), "{err}");
    assert_eq!(results[1]["success"], true);
    assert_eq!(events.last().unwrap().data["finish_reason"], "stop");
    let second = &fake.requests()[1]["body"];
    let tool_msg = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(tool_msg["content"].as_str().unwrap().contains("expression"));
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(stored["messages"][2]["status_reason"], "invalid_arguments");
}

#[tokio::test]
async fn unknown_tool_is_a_tool_error_not_a_crash() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::tool_call("x1", "format_disk", "{}"));
    fake.push(Reply::text("sorry"));
    let (app, [s]) = openai_app(&fake).start_as(["unk"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "do it").await;
    let r = events.iter().find(|e| e.event == "tool_result").unwrap();
    assert_eq!(r.data["success"], false);
    assert!(r.data["error"].as_str().unwrap().contains("format_disk"));
    assert_eq!(events.last().unwrap().data["finish_reason"], "stop");
}

#[tokio::test]
async fn a_model_that_never_stops_is_cut_at_max_iterations() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::tool_call("loop", "calculator", r#"{"expression": "1"}"#).scripted(),
    ));
    let (app, [s]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.llm.max_iterations = 3)
        .start_as(["looper"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "forever").await;
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "max_iterations"
    );
    assert_eq!(fake.request_count(), 3);
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(roles(&stored).len(), 1 + 3 * 2);
}

#[tokio::test]
async fn the_same_tool_failing_twice_stops_the_turn() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(
        Reply::tool_call("bad", "calculator", r#"{"expression": "1/0"}"#).scripted(),
    ));
    let (app, [s]) = openai_app(&fake).start_as(["failer"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "divide").await;
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "tool_failures"
    );
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn upstream_429_is_retried_then_succeeds() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::Status {
        code: 429,
        body: json!({"error": {"message": "slow down"}}).to_string(),
        retry_after: None,
    });
    fake.push(Reply::text("hello after retry"));
    let (app, [s]) = openai_app(&fake).start_as(["retry"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "hi").await;
    assert_eq!(streamed_text(&events), "hello after retry");
    assert_eq!(fake.request_count(), 2);
}

async fn assert_failed_turn(reply: Reply, code: &str) {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(reply.scripted()));
    let (app, [s]) = openai_app(&fake).start_as(["sad"]).await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "hello").await;
    let last = events.last().unwrap();
    assert_eq!(last.event, "error", "{events:?}");
    assert_eq!(last.data["code"], code);
    assert!(!events.iter().any(|e| e.event == "tool_result"));
    let stored = app.conversation(&s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m[0]["role"], "user");
    assert_eq!(m[0]["content"], "hello");
    assert_eq!(m[1]["status"], "incomplete");
    assert_eq!(m[1]["status_reason"], code);
    // The conversation is free again.
    let r = app.send_message(&s.access, &conv, "again").await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn upstream_500_ends_with_an_error_and_keeps_the_user_message() {
    assert_failed_turn(Reply::error(500, "boom"), "upstream_error").await;
}

#[tokio::test]
async fn upstream_garbage_is_a_clear_error() {
    assert_failed_turn(Reply::Garbage, "upstream_malformed").await;
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_executes_nothing() {
    assert_failed_turn(Reply::CutMidToolCall, "upstream_incomplete").await;
}

#[tokio::test]
async fn cancel_stops_the_turn_and_keeps_what_was_produced() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::text("partial answer that never ends").hang());
    let (app, [s]) = openai_app(&fake).start_as(["canceller"]).await;
    let conv = app.new_conversation(&s.access).await;
    let mut resp = app.send_message(&s.access, &conv, "go").await;
    let first = resp.chunk().await.unwrap().unwrap();
    let stream = tokio::spawn(async move {
        let mut body = String::from_utf8_lossy(&first).into_owned();
        while let Some(c) = resp.chunk().await.unwrap() {
            body.push_str(&String::from_utf8_lossy(&c));
        }
        body
    });
    // A second turn in the same conversation is refused while this one runs.
    let r = app.send_message(&s.access, &conv, "me too").await;
    expect_error(r, 409, "turn_in_progress").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let events = parse_sse(
        &tokio::time::timeout(Duration::from_secs(10), stream)
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(events.last().unwrap().data["finish_reason"], "cancelled");
    let stored = app.conversation(&s.access, &conv).await;
    let m = stored["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2, "{stored}");
    assert_eq!(m[1]["status"], "incomplete");
    assert_eq!(m[1]["status_reason"], "cancelled");
    assert_eq!(m[1]["content"], streamed_text(&events));
    // Another user cannot cancel it, nor post into it.
    let other = app.signed_up("intruder").await;
    let r = app
        .post_as(&other.access, &format!("/api/conversations/{conv}/cancel"))
        .send()
        .await
        .unwrap();
    expect_error(r, 404, "not_found").await;
    let r = app.send_message(&other.access, &conv, "hi").await;
    expect_error(r, 404, "not_found").await;
}

#[tokio::test]
async fn anthropic_round_trip_with_tool_use() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::ToolCalls {
        calls: vec![(
            "toolu_1".into(),
            "calculator".into(),
            r#"{"expression": "2^10"}"#.into(),
        )],
        usage: usage(30, 5),
    });
    fake.push(Reply::Text {
        text: "1024".into(),
        usage: usage(60, 2),
    });
    let (app, [s]) = TestApp::builder()
        .anthropic(&fake)
        .settings(|s| s.llm.api_key = Some("test-anthropic-key".to_owned().into()))
        .start_as(["claude_fan"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "2^10?").await;
    assert_eq!(streamed_text(&events), "1024");
    let reqs = fake.requests();
    assert_eq!(reqs[0]["headers"]["x-api-key"], "test-anthropic-key");
    // The system prompt goes as a text block carrying the prompt-cache breakpoint.
    assert_eq!(
        reqs[0]["body"]["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
    let msgs = reqs[1]["body"]["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_1");
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(stored["messages"][1]["input_tokens"], 30);
}

#[tokio::test]
async fn accept_json_gets_the_finished_turn_as_one_document() {
    let (app, [s]) = TestApp::builder().start_as(["jsonfan"]).await;
    let conv = app.new_conversation(&s.access).await;
    let r = app
        .post_as(&s.access, &format!("/api/conversations/{conv}/messages"))
        .header("accept", "application/json")
        .json(&json!({"content": "what is 12*12"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["finish_reason"], "stop");
    assert_eq!(body["content"], "[demo] 12*12 = 144", "{body}");
}

#[tokio::test]
async fn empty_or_oversized_messages_are_refused_and_not_stored() {
    let (app, [s]) = TestApp::builder().start_as(["quiet"]).await;
    let conv = app.new_conversation(&s.access).await;
    for content in ["", "   ", &"x".repeat(32_001)] {
        let r = app.send_message(&s.access, &conv, content).await;
        expect_error(r, 400, "invalid_content").await;
    }
    assert_eq!(
        app.conversation(&s.access, &conv).await["messages"],
        json!([])
    );
}

#[tokio::test]
async fn non_streaming_upstream_works_the_same() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::tool_call(
        "ns1",
        "calculator",
        r#"{"expression": "9*9"}"#,
    ));
    fake.push(Reply::text("81"));
    let (app, [s]) = TestApp::builder()
        .openai(&fake)
        .settings(|s| s.llm.streaming = false)
        .start_as(["batch"])
        .await;
    let conv = app.new_conversation(&s.access).await;
    let events = app.chat(&s.access, &conv, "9*9").await;
    assert_eq!(fake.requests()[0]["body"]["stream"], false);
    let r = events.iter().find(|e| e.event == "tool_result").unwrap();
    assert_eq!(r.data["data"]["result"], 81);
    assert_eq!(streamed_text(&events), "81");
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(roles(&stored), ["user", "assistant", "tool", "assistant"]);
}

/// A NUL character cannot be stored: from a user it is refused with the field named (issue
/// 29, finding 13); from a model (text or tool arguments) it is stored as U+FFFD, never fatal.
#[tokio::test]
async fn nul_characters_from_users_are_refused_and_from_models_stored_not_fatal() {
    let fake = FakeUpstream::start().await;
    fake.push(Reply::tool_call(
        "n1",
        "calculator",
        "{\"expression\": \"1\\u0000+1\"}",
    ));
    fake.push(Reply::text("done\u{0}"));
    let (app, [s]) = openai_app(&fake).start_as(["nully"]).await;
    let r = app
        .post_as(&s.access, "/api/conversations")
        .json(&json!({"title": "a\u{0}b"}))
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 400, "invalid_text").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`title`"),
        "{body}"
    );
    let conv = app.new_conversation(&s.access).await;
    let r = app.send_message(&s.access, &conv, "x\u{0}y").await;
    let body = expect_error(r, 400, "invalid_text").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`content`"),
        "{body}"
    );
    let events = app.chat(&s.access, &conv, "xy").await;
    assert_eq!(
        events.last().unwrap().data["finish_reason"],
        "stop",
        "{events:?}"
    );
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(stored["messages"][0]["content"], "xy");
    assert_eq!(roles(&stored), ["user", "assistant", "tool", "assistant"]);
    assert_eq!(stored["messages"][3]["content"], "done\u{FFFD}");
}

/// The start of a turn commits while its first model call opens. If that COMMIT fails, the
/// client gets an error instead of the model's words, and nothing of the turn is kept: no
/// user message, no claim on the conversation, no hold on the budget.
#[tokio::test]
async fn a_start_that_fails_to_commit_is_an_error_and_keeps_nothing() {
    use diesel_async::SimpleAsyncConnection;

    let (app, [admin, s]) = TestApp::builder().start_as(["boss", "unlucky"]).await;
    let mut db = app.db().await;
    // A deferred check fails at COMMIT, as a lost connection or a full disk would.
    db.batch_execute(
        "CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.content = 'refused at commit' THEN RAISE EXCEPTION 'no'; END IF; \
         RETURN NULL; END $$; \
         CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON messages \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();",
    )
    .await
    .unwrap();
    let conv = app.new_conversation(&s.access).await;

    // Unlimited (the user message travels with the COMMIT), then limited (a hold was taken).
    for budget in [None, Some(1_000_000)] {
        app.set_budget(&admin.access, s.user_id, budget).await;
        let events = app.chat(&s.access, &conv, "refused at commit").await;
        // No `turn_start`: it names the stored user message, and there is none.
        assert_eq!(event_names(&events), ["error"], "{events:?}");
        assert_eq!(events[0].data["code"], "unavailable");
        assert!(events[0].data["message"]
            .as_str()
            .unwrap()
            .contains("may not have been saved"));
        let stored = app.conversation(&s.access, &conv).await;
        assert_eq!(stored["messages"].as_array().unwrap().len(), 0, "{stored}");
        let totals = app.budget_totals(s.user_id).await;
        assert_eq!((totals.reserved, totals.holds, totals.ledger), (0, 0, 0));
    }

    // The conversation was never claimed: the next message goes through.
    let events = app.chat(&s.access, &conv, "hello").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    let stored = app.conversation(&s.access, &conv).await;
    assert_eq!(roles(&stored)[0], "user");
}

/// Through the running server, model calls reuse their upstream connections even when each
/// body's end trails its `[DONE]`: a connection per worker thread's client at most, not one
/// per call (before, the body was dropped at `[DONE]` and every call connected anew).
#[tokio::test]
async fn model_calls_keep_their_upstream_connections() {
    let fake = FakeUpstream::start().await;
    let (app, [s]) = openai_app(&fake).start_as(["keeper"]).await;
    let conv = app.new_conversation(&s.access).await;
    fake.set_default(Some(
        Reply::Text {
            text: "again".into(),
            usage: usage(5, 1),
        }
        .scripted()
        .end_delay(Duration::from_millis(30)),
    ));
    for i in 0..8 {
        let events = app.chat(&s.access, &conv, &format!("turn {i}")).await;
        assert_eq!(events.last().unwrap().event, "done");
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    assert!(fake.request_count() >= 8);
    let connections = fake.connection_count();
    assert!(
        connections <= 4,
        "{connections} connections for {} model calls",
        fake.request_count()
    );
}
