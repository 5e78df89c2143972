//! Unit tests of the Anthropic adapter: body shape and stream events.

use std::collections::VecDeque;

use eventsource_stream::Event;
use serde_json::{json, Value};

use super::*;
use crate::llm::http::SseDecoder;
use crate::llm::{ChatMessage, StreamEvent, ToolCall, ToolSpec};

#[test]
fn body_merges_and_orders_blocks() {
    let mut req = ChatRequest::new(
        "claude-x",
        vec![
            ChatMessage::system("sys A"),
            ChatMessage::user("hello"),
            ChatMessage::user("again"),
            ChatMessage::assistant_tool_calls(
                "let me check",
                vec![
                    ToolCall {
                        id: "t1".into(),
                        name: "a".into(),
                        arguments: "{\"x\":1}".into(),
                    },
                    ToolCall {
                        id: "t2".into(),
                        name: "b".into(),
                        arguments: "not json".into(),
                    },
                ],
            ),
            ChatMessage::tool_result("t1", "r1"),
            ChatMessage::tool_result("t2", "r2"),
            ChatMessage::user("thanks"),
        ],
    );
    req.tools.push(ToolSpec {
        name: "a".into(),
        description: "A".into(),
        parameters: json!({"type": "object"}),
    });
    req.tool_choice = ToolChoice::Required;
    let body = serde_json::to_value(build_body(&req, true)).unwrap();
    // The system prompt is a cache breakpoint (it covers the tool specs before it).
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "sys A", "cache_control": {"type": "ephemeral"}}])
    );
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["max_tokens"], 4096);
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["content"].as_array().map(Vec::len), Some(2));
    assert_eq!(msgs[1]["content"][1]["input"], json!({"x": 1}));
    assert_eq!(msgs[1]["content"][2]["input"], json!({}));
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][1]["tool_use_id"], "t2");
    assert_eq!(msgs[2]["content"][2]["type"], "text");
    assert_eq!(body["tool_choice"]["type"], "any");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

fn ev(kind: &str, data: Value) -> Event {
    Event {
        event: kind.into(),
        data: data.to_string(),
        ..Default::default()
    }
}

#[test]
fn error_event_and_eof() {
    let mut d = MessageDecoder::default();
    let mut out = VecDeque::new();
    let start = json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3, "cache_read_input_tokens": 2, "output_tokens": 1}}});
    assert_eq!(d.on_event(&ev("message_start", start), &mut out), Ok(false));
    assert_eq!(d.input_tokens, Some(5));
    let err =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    assert_eq!(
        d.on_event(&ev("error", err), &mut out),
        Err(LlmError::Upstream {
            status: 529,
            message: "Overloaded".into()
        })
    );
    assert_eq!(d.on_eof(&mut out), Err(LlmError::StreamEndedEarly));
    assert!(out.is_empty());
}

/// Two recorded Anthropic streams of the same conversation: the first writes ~2.4k tokens of
/// tool specs and system prompt to the cache, the second reads them. `input_tokens` leaves
/// the cache out, so the normalised input adds both cache counts back.
#[test]
fn recorded_streams_that_write_then_read_the_cache_are_split_without_double_counting() {
    let run = |start: Value, delta_usage: Value| {
        let mut d = MessageDecoder::default();
        let mut out = VecDeque::new();
        let events = [
            ("message_start", start),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":delta_usage}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ];
        for (kind, data) in events {
            let _ = d.on_event(&ev(kind, data), &mut out);
        }
        out.iter().find_map(|e| match e {
            StreamEvent::Completed { usage, .. } => *usage,
            _ => None,
        })
    };
    let first = run(
        json!({"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":2419,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":2419,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}),
        json!({"output_tokens": 42}),
    );
    let Some(first) = first else {
        panic!("the first stream did not complete");
    };
    assert_eq!(
        (
            first.input_tokens,
            first.cache_read_tokens,
            first.cache_write_tokens,
            first.output_tokens
        ),
        (2431, 0, 2419, 42)
    );
    let c = first.counts();
    assert_eq!(
        (c.input, c.cache_read, c.cache_write, c.output),
        (12, 0, 2419, 42)
    );

    // The next call reads what the first wrote (message_delta repeats the cache counts, as
    // newer API versions do).
    let second = run(
        json!({"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":2419,"output_tokens":1}}}),
        json!({"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":2419,"output_tokens":17}),
    );
    let Some(second) = second else {
        panic!("the second stream did not complete");
    };
    let c = second.counts();
    assert_eq!(
        (c.input, c.cache_read, c.cache_write, c.output),
        (30, 2419, 0, 17)
    );
    assert_eq!(second.input_tokens, 2449, "every prompt token once");
}
