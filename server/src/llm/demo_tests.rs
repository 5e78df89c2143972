//! Unit tests of the demo model (`demo.rs`).

use super::*;
use crate::llm::ToolSpec;

fn tools() -> Vec<ToolSpec> {
    ["current_time", "calculator", "list_files", "read_file"]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        })
        .collect()
}

fn call_for(text: &str) -> Option<(String, Value)> {
    let mut req = ChatRequest::new("demo", vec![ChatMessage::user(text)]);
    req.tools = tools();
    match plan(&req) {
        Plan::Call(n, a) => Some((n.to_string(), a)),
        Plan::Say(_) => None,
    }
}

#[test]
fn recognises_requests() {
    assert_eq!(
        call_for("what time is it?"),
        Some(("current_time".into(), json!({})))
    );
    assert_eq!(
        call_for("What's the time in Europe/Paris?"),
        Some(("current_time".into(), json!({"timezone": "Europe/Paris"})))
    );
    assert_eq!(
        call_for("what is 2+2*3"),
        Some(("calculator".into(), json!({"expression": "2+2*3"})))
    );
    assert_eq!(
        call_for("calculate (1+2)/3 please"),
        Some(("calculator".into(), json!({"expression": "(1+2)/3"})))
    );
    assert_eq!(
        call_for("how much is 2 ^ 10 - 24 % 5?"),
        Some((
            "calculator".into(),
            json!({"expression": "2 ^ 10 - 24 % 5"})
        ))
    );
    assert_eq!(
        call_for("list my files"),
        Some(("list_files".into(), json!({})))
    );
    assert_eq!(
        call_for("please read notes.txt."),
        Some(("read_file".into(), json!({"path": "notes.txt"})))
    );
    assert_eq!(
        call_for("Can you read todo"),
        Some(("read_file".into(), json!({"path": "todo"})))
    );
    assert_eq!(
        call_for("I already read the docs, what time is it?"),
        Some(("current_time".into(), json!({})))
    );
    assert_eq!(call_for("hello there"), None);
    assert_eq!(call_for("I have 3 cats"), None);
}

#[tokio::test]
async fn the_slow_mode_waits_before_each_word() {
    let req = ChatRequest::new("demo", vec![ChatMessage::user("hello")]);
    let words = DemoProvider::new().respond(&req).len() as u32;
    let delay = Duration::from_millis(15);
    let started = std::time::Instant::now();
    let events: Vec<_> = DemoProvider::with_delay(delay)
        .stream_chat(req)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len() as u32, words);
    assert!(words > 10, "the help text is many words: {words}");
    assert!(
        started.elapsed() >= delay * words,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn missing_tool_is_explained() {
    let req = ChatRequest::new("demo", vec![ChatMessage::user("what time is it")]);
    let events = DemoProvider::new().respond(&req);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("[demo] "));
    assert!(text.contains("current_time"));
    assert!(text.contains("your role does not allow it"), "{text}");
}

#[test]
fn summarizes_calculator_result() {
    let mut req = ChatRequest::new(
        "demo",
        vec![
            ChatMessage::user("what is 2+2*3"),
            ChatMessage::assistant_tool_calls(
                "",
                vec![ToolCall {
                    id: "call_demo_1".into(),
                    name: "calculator".into(),
                    arguments: "{\"expression\":\"2+2*3\"}".into(),
                }],
            ),
            ChatMessage::tool_result("call_demo_1", "{\"result\": 8}"),
        ],
    );
    req.tools = tools();
    let text: String = DemoProvider::new()
        .respond(&req)
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "[demo] 2+2*3 = 8");
}
