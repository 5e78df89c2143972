//! Unit tests of the OpenAI adapter: body shape and chunk assembly.

use std::collections::VecDeque;

use eventsource_stream::Event;
use serde_json::{json, Value};

use super::*;
use crate::llm::http::{self, SseDecoder};
use crate::llm::{FinishReason, StreamEvent, ToolCall, ToolChoice, ToolSpec};

fn body_of(req: &ChatRequest, streaming: bool) -> Value {
    serde_json::to_value(build_body(req, streaming, false)).unwrap()
}

#[test]
fn body_shape() {
    let mut req = ChatRequest::new(
        "gpt-x",
        vec![
            ChatMessage::system("be nice"),
            ChatMessage::user("hi"),
            ChatMessage::assistant_tool_calls(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "calculator".into(),
                    arguments: "{\"expression\":\"1+1\"}".into(),
                }],
            ),
            ChatMessage::tool_result("c1", "2"),
        ],
    );
    let body = body_of(&req, true);
    assert!(body.get("tools").is_none());
    assert!(body.get("tool_choice").is_none());
    assert_eq!(body["stream_options"]["include_usage"], json!(true));
    assert_eq!(body["messages"][2]["content"], Value::Null);
    assert_eq!(body["messages"][2]["tool_calls"][0]["type"], "function");
    assert_eq!(body["messages"][3]["tool_call_id"], "c1");
    req.tools.push(ToolSpec {
        name: "calculator".into(),
        description: "calc".into(),
        parameters: json!({"type": "object"}),
    });
    req.tool_choice = ToolChoice::Named("calculator".into());
    let body = body_of(&req, false);
    assert_eq!(body["tool_choice"]["function"]["name"], "calculator");
    assert_eq!(body["tools"][0]["function"]["name"], "calculator");
    assert_eq!(body["stream"], json!(false));
}

fn ev(data: &str) -> Event {
    Event {
        event: "message".into(),
        data: data.into(),
        ..Default::default()
    }
}

#[test]
fn finish_with_usage_completes_without_done() {
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    let chunk = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#;
    assert_eq!(d.on_event(&ev(chunk), &mut out), Ok(true));
    assert!(matches!(out.back(), Some(StreamEvent::Completed { .. })));
}

#[tokio::test]
async fn a_finished_message_whose_stream_never_ends_is_accepted_promptly() {
    use futures_util::StreamExt;
    let chunk =
        r#"{"choices":[{"index":0,"delta":{"content":"all of it"},"finish_reason":"stop"}]}"#;
    let events = futures_util::stream::iter([Ok(ev(chunk))])
        .chain(futures_util::stream::pending())
        .boxed();
    let started = std::time::Instant::now();
    let got: Vec<_> = http::decode_sse(events, ChunkDecoder::default())
        .collect()
        .await;
    assert!(started.elapsed() < http::AFTER_FINISH_WAIT * 2);
    assert!(
        matches!(got.last(), Some(Ok(StreamEvent::Completed { .. }))),
        "{got:?}"
    );
}

#[test]
fn done_without_finish_is_incomplete() {
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    assert_eq!(
        d.on_event(&ev("[DONE]"), &mut out),
        Err(LlmError::StreamEndedEarly)
    );
}

#[test]
fn in_stream_error_chunk() {
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    let chunk = r#"{"error":{"message":"server overloaded","type":"server_error","code":503}}"#;
    assert_eq!(
        d.on_event(&ev(chunk), &mut out),
        Err(LlmError::Upstream {
            status: 503,
            message: "server overloaded".into()
        })
    );
    let chunk = r#"{"error":{"message":"boom","code":"internal"}}"#;
    assert!(matches!(
        d.on_event(&ev(chunk), &mut out),
        Err(LlmError::Upstream { status: 500, .. })
    ));
}

#[test]
fn stop_with_tool_calls_is_normalized_and_ids_filled() {
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    let c1 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"b","arguments":"{}"}}]}}]}"#;
    let c2 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"a","arguments":"{\"k\""}}]}}]}"#;
    let c3 = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"stop"}]}"#;
    for c in [c1, c2, c3] {
        assert_eq!(d.on_event(&ev(c), &mut out), Ok(false));
    }
    assert_eq!(d.on_event(&ev("[DONE]"), &mut out), Ok(true));
    match out.back() {
        Some(StreamEvent::Completed {
            finish_reason,
            tool_calls,
            ..
        }) => {
            assert_eq!(*finish_reason, FinishReason::ToolCalls);
            assert_eq!(tool_calls[0].id, "x");
            assert_eq!(tool_calls[0].arguments, "{\"k\":1}");
            assert_eq!(tool_calls[1].id, "call_1");
            assert_eq!(tool_calls[1].name, "b");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn official_host_uses_max_completion_tokens() {
    let p =
        OpenAiProvider::new("https://api.openai.com/v1/", None, HttpSettings::default()).unwrap();
    assert_eq!(p.base_url(), "https://api.openai.com/v1");
    let mut req = ChatRequest::new("m", vec![ChatMessage::user("x")]);
    req.max_tokens = Some(5);
    let body = serde_json::to_value(p.request_body(&req)).unwrap();
    assert_eq!(body["max_completion_tokens"], 5);
    assert!(body.get("max_tokens").is_none());
}

#[test]
fn finish_then_eof_completes() {
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    let chunk =
        r#"{"model":"m","choices":[{"index":0,"delta":{"content":"hey"},"finish_reason":"stop"}]}"#;
    assert_eq!(d.on_event(&ev(chunk), &mut out), Ok(false));
    assert_eq!(d.on_eof(&mut out), Ok(()));
    assert_eq!(out.len(), 2);
    assert!(matches!(
        out.back(),
        Some(StreamEvent::Completed {
            finish_reason: FinishReason::Stop,
            ..
        })
    ));
}

/// A stream as OpenAI sends it with `stream_options.include_usage` on a prompt whose first
/// 2,304 tokens hit the prompt cache: the usage arrives in a last chunk with no choices,
/// `prompt_tokens` counting the cached tokens too.
#[test]
fn recorded_stream_usage_with_a_cache_hit_is_split_without_double_counting() {
    let recorded = [
        r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
        r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":2500,"completion_tokens":30,"total_tokens":2530,"prompt_tokens_details":{"cached_tokens":2304,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#,
    ];
    let mut d = ChunkDecoder::default();
    let mut out = VecDeque::new();
    for chunk in recorded {
        let _ = d.on_event(&ev(chunk), &mut out);
    }
    let _ = d.on_event(&ev("[DONE]"), &mut out);
    let usage = out.iter().find_map(|e| match e {
        StreamEvent::Completed { usage, .. } => *usage,
        _ => None,
    });
    let Some(usage) = usage else {
        panic!("no usage in {out:?}");
    };
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.output_tokens
        ),
        (2500, 2304, 0, 30)
    );
    let charged = usage.counts();
    assert_eq!(
        (charged.input, charged.cache_read, charged.output),
        (196, 2304, 30)
    );
    assert_eq!(charged.total(), 2530, "every token once");
}
