//! The provider adapters against the fake upstream speaking the real wire formats.

use std::time::{Duration, Instant};

use agentchat::llm::anthropic::AnthropicProvider;
use agentchat::llm::demo::DemoProvider;
use agentchat::llm::openai::OpenAiProvider;
use agentchat::llm::{
    ChatMessage, ChatRequest, EventStream, FinishReason, HttpSettings, LlmError, LlmProvider,
    StreamEvent, ToolCall, ToolChoice, ToolSpec, Usage,
};
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use futures_util::StreamExt;
use serde_json::json;

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        first_byte_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(20),
        max_retries: 2,
        retry_base_delay: Duration::from_millis(10),
        streaming: true,
        on_retry: Default::default(),
    }
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

fn request() -> ChatRequest {
    let mut req = ChatRequest::new(
        "test-model",
        vec![
            ChatMessage::system("You are terse."),
            ChatMessage::user("hi"),
        ],
    );
    req.tools = vec![tool("calculator"), tool("current_time")];
    req
}

fn openai(up: &FakeUpstream, s: HttpSettings) -> OpenAiProvider {
    OpenAiProvider::new(up.base_url_openai() + "/", Some("sk-test".into()), s).unwrap()
}

fn anthropic(up: &FakeUpstream, s: HttpSettings) -> AnthropicProvider {
    AnthropicProvider::new(up.base_url_anthropic(), Some("ak-test".into()), s).unwrap()
}

/// Collects events until the end or the first error; asserts nothing follows an
/// error or a Completed event.
async fn collect(mut stream: EventStream) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => {
                assert!(
                    !matches!(events.last(), Some(StreamEvent::Completed { .. })),
                    "event after Completed: {ev:?}"
                );
                events.push(ev);
            }
            Err(e) => {
                assert!(stream.next().await.is_none(), "items after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

async fn run(p: &dyn LlmProvider, req: ChatRequest) -> (Vec<StreamEvent>, Option<LlmError>) {
    match p.stream_chat(req).await {
        Ok(s) => collect(s).await,
        Err(e) => (Vec::new(), Some(e)),
    }
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn completed(
    events: &[StreamEvent],
) -> (FinishReason, Vec<ToolCall>, Option<Usage>, Option<String>) {
    let completed_count = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Completed { .. }))
        .count();
    assert_eq!(completed_count, 1, "exactly one Completed: {events:?}");
    match events.last() {
        Some(StreamEvent::Completed {
            finish_reason,
            tool_calls,
            usage,
            response_model,
        }) => (
            finish_reason.clone(),
            tool_calls.clone(),
            *usage,
            response_model.clone(),
        ),
        other => panic!("last event is not Completed: {other:?}"),
    }
}

fn has_completed(events: &[StreamEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, StreamEvent::Completed { .. }))
}

fn usage(i: u64, o: u64) -> Option<Usage> {
    Some(Usage::new(i, o))
}

const LONG_ARGS: &str =
    r#"{"expression": "(12345 + 678) * 9 / 3 - 42", "note": "émoji ✓ and \"quotes\""}"#;

/// Sequential streamed calls go over kept-alive connections even when the end of each body
/// trails its last event: the adapter reads the end in the background instead of dropping
/// the body (which closes the connection, and the next call pays a new handshake before its
/// first token). Each call starts after the last one's end has arrived, so all share one.
async fn streams_reuse_their_connection(provider: &dyn LlmProvider, up: &FakeUpstream) {
    for i in 0..4 {
        up.push(
            Reply::Text {
                text: format!("answer {i}"),
                usage: usage(10, 2),
            }
            .scripted()
            .end_delay(Duration::from_millis(30)),
        );
        let (events, err) = run(provider, request()).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), format!("answer {i}"));
        // The next call waits for the last one's end, as a turn's next call would.
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    assert_eq!(up.request_count(), 4);
    assert_eq!(
        up.connection_count(),
        1,
        "four calls whose ends came in time shared one connection"
    );
}

#[tokio::test]
async fn openai_streams_reuse_their_connection() {
    let up = FakeUpstream::start().await;
    streams_reuse_their_connection(&openai(&up, settings()), &up).await;
}

#[tokio::test]
async fn anthropic_streams_reuse_their_connection() {
    let up = FakeUpstream::start().await;
    streams_reuse_their_connection(&anthropic(&up, settings()), &up).await;
}

// ------------------------------------------------------------------ OpenAI

#[tokio::test]
async fn openai_text_streaming_with_usage() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Text {
        text: "Hello there, world!".into(),
        usage: usage(12, 5),
    });
    let p = openai(&up, settings());
    assert_eq!(p.provider_name(), "openai");
    assert_eq!(p.server_address().as_deref(), Some("127.0.0.1"));
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert!(events.len() > 3, "streamed in several deltas: {events:?}");
    assert_eq!(text_of(&events), "Hello there, world!");
    let (finish, calls, u, model) = completed(&events);
    assert_eq!(finish, FinishReason::Stop);
    assert!(calls.is_empty());
    assert_eq!(u, usage(12, 5));
    assert_eq!(model.as_deref(), Some("test-model"));

    let reqs = up.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["path"], "/v1/chat/completions");
    assert_eq!(reqs[0]["headers"]["authorization"], "Bearer sk-test");
    let body = &reqs[0]["body"];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn openai_without_usage_and_without_tools() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("ok"));
    let p = OpenAiProvider::new(up.base_url_openai(), None, settings()).unwrap();
    let mut req = request();
    req.tools.clear();
    let (events, err) = run(&p, req).await;
    assert_eq!(err, None);
    let (finish, _, u, _) = completed(&events);
    assert_eq!(finish, FinishReason::Stop);
    assert_eq!(u, None);
    let body = &up.requests()[0]["body"];
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert!(up.requests()[0]["headers"].get("authorization").is_none());
}

#[tokio::test]
async fn openai_tool_call_split_across_many_chunks() {
    let up = FakeUpstream::start().await;
    up.push(
        Reply::ToolCalls {
            calls: vec![("call_1".into(), "calculator".into(), LONG_ARGS.into())],
            usage: usage(30, 20),
        }
        .split_args_into(25),
    );
    let p = openai(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert!(events.contains(&StreamEvent::ToolCallStart {
        index: 0,
        id: "call_1".into(),
        name: "calculator".into()
    }));
    let (finish, calls, u, _) = completed(&events);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(
        calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "calculator".into(),
            arguments: LONG_ARGS.into()
        }]
    );
    assert_eq!(u, usage(30, 20));
}

#[tokio::test]
async fn openai_two_parallel_tool_calls_in_index_order() {
    let up = FakeUpstream::start().await;
    up.push(Reply::ToolCalls {
        calls: vec![
            ("call_a".into(), "current_time".into(), "{}".into()),
            (
                "call_b".into(),
                "calculator".into(),
                r#"{"expression":"1+1"}"#.into(),
            ),
        ],
        usage: None,
    });
    let p = openai(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    let starts: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![0, 1]);
    let (_, calls, _, _) = completed(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_a");
    assert_eq!(calls[0].arguments, "{}");
    assert_eq!(calls[1].name, "calculator");
    assert_eq!(calls[1].arguments, r#"{"expression":"1+1"}"#);
}

#[tokio::test]
async fn openai_non_streaming_mode() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Text {
        text: "whole answer".into(),
        usage: usage(7, 2),
    });
    up.push(Reply::tool_call(
        "call_9",
        "calculator",
        r#"{"expression":"2*3"}"#,
    ));
    let p = openai(
        &up,
        HttpSettings {
            streaming: false,
            ..settings()
        },
    );
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert_eq!(events[0], StreamEvent::TextDelta("whole answer".into()));
    let (finish, _, u, model) = completed(&events);
    assert_eq!(finish, FinishReason::Stop);
    assert_eq!(u, usage(7, 2));
    assert_eq!(model.as_deref(), Some("test-model"));
    assert_eq!(up.requests()[0]["body"]["stream"], false);

    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    let (finish, calls, _, _) = completed(&events);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(calls[0].arguments, r#"{"expression":"2*3"}"#);
}

#[tokio::test]
async fn openai_429_with_retry_after_then_success() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Status {
        code: 429,
        body: r#"{"error":{"message":"slow down","type":"rate_limit"}}"#.into(),
        retry_after: Some(1),
    });
    up.push(Reply::text("finally"));
    let p = openai(&up, settings());
    let t0 = Instant::now();
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "finally");
    assert_eq!(up.request_count(), 2);
    assert!(
        t0.elapsed() >= Duration::from_millis(950),
        "Retry-After honoured"
    );
}

#[tokio::test]
async fn openai_429_without_retries_is_rate_limited() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Status {
        code: 429,
        body: "{}".into(),
        retry_after: Some(7),
    });
    let p = openai(
        &up,
        HttpSettings {
            max_retries: 0,
            ..settings()
        },
    );
    let (_, err) = run(&p, request()).await;
    assert_eq!(
        err,
        Some(LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        })
    );
    assert_eq!(err.map(|e| e.code()), Some("upstream_rate_limited"));
}

#[tokio::test]
async fn openai_500_exhausts_retries() {
    let up = FakeUpstream::start().await; // empty queue: 500 with an error body
    let p = openai(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert!(events.is_empty());
    match err {
        Some(LlmError::Upstream { status, message }) => {
            assert_eq!(status, 500);
            assert_eq!(message, "fake upstream: no scripted reply");
        }
        other => panic!("expected Upstream, got {other:?}"),
    }
    assert_eq!(up.request_count(), 3, "1 try + max_retries(2)");
}

#[tokio::test]
async fn openai_400_is_not_retried_and_message_truncated() {
    let up = FakeUpstream::start().await;
    let long = "x".repeat(1000);
    up.push(Reply::Status {
        code: 400,
        body: json!({"error": {"message": long}}).to_string(),
        retry_after: None,
    });
    let p = openai(&up, settings());
    let (_, err) = run(&p, request()).await;
    match err {
        Some(LlmError::Upstream { status, message }) => {
            assert_eq!(status, 400);
            assert!(message.chars().count() <= 301);
        }
        other => panic!("expected Upstream, got {other:?}"),
    }
    assert_eq!(up.request_count(), 1);
}

#[tokio::test]
async fn openai_garbage_is_malformed() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Garbage);
    up.push(Reply::Garbage);
    let p = openai(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert!(matches!(err, Some(LlmError::Malformed(_))), "{err:?}");
    assert!(!has_completed(&events));

    let p = openai(
        &up,
        HttpSettings {
            streaming: false,
            ..settings()
        },
    );
    let (_, err) = run(&p, request()).await;
    assert!(matches!(err, Some(LlmError::Malformed(_))), "{err:?}");
}

#[tokio::test]
async fn openai_cut_mid_tool_call_is_incomplete() {
    let up = FakeUpstream::start().await;
    up.push(Reply::CutMidToolCall);
    let p = openai(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::StreamEndedEarly));
    assert!(!has_completed(&events));
    assert!(events
        .iter()
        .any(|e| matches!(e, StreamEvent::ToolCallStart { .. })));
    assert_eq!(up.request_count(), 1, "no retry once streaming began");
}

#[tokio::test]
async fn openai_idle_timeout_on_hang() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("partial answer").hang());
    let p = openai(
        &up,
        HttpSettings {
            idle_timeout: Duration::from_millis(300),
            ..settings()
        },
    );
    let t0 = Instant::now();
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::Timeout("idle")));
    assert_eq!(text_of(&events), "partial answer");
    assert!(!has_completed(&events));
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn openai_first_byte_and_total_timeouts() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("late").delay_first_byte(Duration::from_secs(3)));
    let p = openai(
        &up,
        HttpSettings {
            first_byte_timeout: Duration::from_millis(300),
            ..settings()
        },
    );
    let (_, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::Timeout("first_byte")));
    assert_eq!(err.map(|e| e.code()), Some("upstream_timeout"));

    up.push(Reply::text("a b c d e f g h i j").chunk_delay(Duration::from_millis(100)));
    let p = openai(
        &up,
        HttpSettings {
            total_timeout: Duration::from_millis(500),
            ..settings()
        },
    );
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::Timeout("total")));
    assert!(!has_completed(&events));
}

#[tokio::test]
async fn openai_connect_error_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = OpenAiProvider::new(format!("http://127.0.0.1:{port}/v1"), None, settings()).unwrap();
    let (_, err) = run(&p, request()).await;
    assert!(matches!(err, Some(LlmError::Connect(_))), "{err:?}");
    assert_eq!(err.map(|e| e.code()), Some("upstream_unreachable"));
}

// --------------------------------------------------------------- Anthropic

#[tokio::test]
async fn anthropic_text_streaming_with_usage() {
    let up = FakeUpstream::start().await;
    up.push(Reply::Text {
        text: "Bonjour tout le monde".into(),
        usage: usage(21, 9),
    });
    let p = anthropic(&up, settings());
    assert_eq!(p.provider_name(), "anthropic");
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert!(events.len() > 3);
    assert_eq!(text_of(&events), "Bonjour tout le monde");
    let (finish, calls, u, model) = completed(&events);
    assert_eq!(finish, FinishReason::Stop);
    assert!(calls.is_empty());
    assert_eq!(u, usage(21, 9));
    assert_eq!(model.as_deref(), Some("test-model"));
}

#[tokio::test]
async fn anthropic_tool_calls_split_and_parallel() {
    let up = FakeUpstream::start().await;
    up.push(
        Reply::ToolCalls {
            calls: vec![
                ("toolu_1".into(), "calculator".into(), LONG_ARGS.into()),
                ("toolu_2".into(), "current_time".into(), "{}".into()),
            ],
            usage: usage(50, 40),
        }
        .split_args_into(30),
    );
    let p = anthropic(&up, settings());
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    let starts: Vec<(usize, String)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, id, .. } => Some((*index, id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(0, "toolu_1".into()), (1, "toolu_2".into())]);
    let (finish, calls, u, _) = completed(&events);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, LONG_ARGS);
    assert_eq!(calls[1].name, "current_time");
    assert_eq!(calls[1].arguments, "{}");
    assert_eq!(u, usage(50, 40));
}

#[tokio::test]
async fn anthropic_non_streaming_mode() {
    let up = FakeUpstream::start().await;
    up.push(Reply::ToolCalls {
        calls: vec![(
            "toolu_x".into(),
            "calculator".into(),
            r#"{"expression":"1+2"}"#.into(),
        )],
        usage: usage(5, 6),
    });
    let p = anthropic(
        &up,
        HttpSettings {
            streaming: false,
            ..settings()
        },
    );
    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    let (finish, calls, u, _) = completed(&events);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(calls[0].id, "toolu_x");
    let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(args, json!({"expression": "1+2"}));
    assert_eq!(u, usage(5, 6));
    assert!(up.requests()[0]["body"].get("stream").is_none());
}

#[tokio::test]
async fn anthropic_request_shape() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("ok"));
    let p = anthropic(&up, settings());
    let mut req = ChatRequest::new(
        "claude-test",
        vec![
            ChatMessage::system("System prompt."),
            ChatMessage::user("what is 2+2 and the time?"),
            ChatMessage::assistant_tool_calls(
                "Checking.",
                vec![
                    ToolCall {
                        id: "toolu_a".into(),
                        name: "calculator".into(),
                        arguments: r#"{"expression":"2+2"}"#.into(),
                    },
                    ToolCall {
                        id: "toolu_b".into(),
                        name: "current_time".into(),
                        arguments: "".into(),
                    },
                ],
            ),
            ChatMessage::tool_result("toolu_a", "4"),
            ChatMessage::tool_result("toolu_b", "12:00"),
        ],
    );
    req.tools = vec![tool("calculator"), tool("current_time")];
    req.tool_choice = ToolChoice::Named("calculator".into());
    req.temperature = Some(0.5);
    let (_, err) = run(&p, req).await;
    assert_eq!(err, None);

    let r = &up.requests()[0];
    assert_eq!(r["path"], "/v1/messages");
    assert_eq!(r["headers"]["x-api-key"], "ak-test");
    assert_eq!(r["headers"]["anthropic-version"], "2023-06-01");
    assert!(r["headers"]["content-type"]
        .as_str()
        .unwrap()
        .starts_with("application/json"));
    let b = &r["body"];
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "System prompt.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "calculator"})
    );
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    let msgs = b["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert!(msgs.iter().all(|m| m["role"] != "system"));
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "text", "text": "Checking."})
    );
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_a", "name": "calculator", "input": {"expression": "2+2"}})
    );
    assert_eq!(msgs[1]["content"][2]["input"], json!({}));
    assert_eq!(msgs[2]["role"], "user");
    // The last tool result is the history's cache breakpoint.
    assert_eq!(
        msgs[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "4"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "12:00", "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[tokio::test]
async fn anthropic_failures() {
    let up = FakeUpstream::start().await;
    up.push(Reply::CutMidToolCall);
    up.push(Reply::Garbage);
    up.push(Reply::Status {
        code: 429,
        body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#.into(),
        retry_after: Some(0),
    });
    up.push(Reply::text("after the rate limit"));
    up.push(Reply::text("never finishes").hang());
    let p = anthropic(
        &up,
        HttpSettings {
            idle_timeout: Duration::from_millis(300),
            ..settings()
        },
    );

    let (events, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::StreamEndedEarly));
    assert!(!has_completed(&events));

    let (events, err) = run(&p, request()).await;
    assert!(matches!(err, Some(LlmError::Malformed(_))), "{err:?}");
    assert!(!has_completed(&events));

    let (events, err) = run(&p, request()).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "after the rate limit");
    assert_eq!(up.request_count(), 4);

    let (events, err) = run(&p, request()).await;
    assert_eq!(err, Some(LlmError::Timeout("idle")));
    assert!(!has_completed(&events));
}

// -------------------------------------------------------------------- Demo

#[tokio::test]
async fn demo_calls_time_tool_then_answers() {
    let p = DemoProvider::new();
    assert_eq!(p.provider_name(), "demo");
    assert_eq!(p.server_address(), None);
    let mut req = ChatRequest::new("demo", vec![ChatMessage::user("What time is it?")]);
    req.tools = vec![tool("current_time"), tool("calculator")];
    let (events, err) = run(&p, req.clone()).await;
    assert_eq!(err, None);
    let (finish, calls, u, model) = completed(&events);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "current_time");
    assert_eq!(calls[0].id, "call_demo_1");
    assert_eq!(calls[0].arguments, "{}");
    assert!(u.is_some_and(|u| u.input_tokens >= 1 && u.output_tokens >= 1));
    assert_eq!(model.as_deref(), Some("demo"));

    req.messages
        .push(ChatMessage::assistant_tool_calls("", calls.clone()));
    req.messages.push(ChatMessage::tool_result(
        "call_demo_1",
        r#"{"time": "2026-01-01T12:00:00+01:00"}"#,
    ));
    let (events, err) = run(&p, req).await;
    assert_eq!(err, None);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
        .count();
    assert!(deltas > 1, "streamed word by word");
    let text = text_of(&events);
    assert!(text.starts_with("[demo] "), "{text}");
    assert!(text.contains("2026-01-01T12:00:00+01:00"), "{text}");
    let (finish, calls, _, _) = completed(&events);
    assert_eq!(finish, FinishReason::Stop);
    assert!(calls.is_empty());
}

#[tokio::test]
async fn demo_help_and_timezone() {
    let p = DemoProvider::new();
    let mut req = ChatRequest::new("demo", vec![ChatMessage::user("hello!")]);
    req.tools = vec![tool("current_time")];
    let (events, _) = run(&p, req.clone()).await;
    assert!(text_of(&events).starts_with("[demo] "));

    req.messages = vec![ChatMessage::user("time in Europe/Paris please")];
    let (events, _) = run(&p, req).await;
    let (_, calls, _, _) = completed(&events);
    assert_eq!(calls[0].arguments, r#"{"timezone":"Europe/Paris"}"#);
}
