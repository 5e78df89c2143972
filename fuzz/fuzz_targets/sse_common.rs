// Shared by the two SSE targets: what every decoded stream must satisfy.

use agentchat::llm::StreamEvent;

/// The first byte picks the chunk size (1 to 64 bytes: events split anywhere); the rest is
/// the body.
pub fn split(data: &[u8]) -> Option<(usize, &[u8])> {
    let (first, body) = data.split_first()?;
    Some((usize::from(first % 64) + 1, body))
}

/// At most one `Completed` and nothing after it; an error only last; every assembled tool
/// call was announced with the same id and name.
pub fn check<E: std::fmt::Debug>(items: &[Result<StreamEvent, E>]) {
    let mut announced: Vec<(String, String)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let last = i + 1 == items.len();
        match item {
            Err(_) => assert!(last, "an error was not the last item: {items:?}"),
            Ok(StreamEvent::Completed { tool_calls, .. }) => {
                assert!(last, "Completed was not last: {items:?}");
                for call in tool_calls {
                    assert!(
                        announced.iter().any(|(_, n)| n == &call.name) || call.name.is_empty(),
                        "unannounced tool call {call:?}: {items:?}"
                    );
                }
            }
            Ok(StreamEvent::ToolCallStart { id, name, .. }) => {
                announced.push((id.clone(), name.clone()))
            }
            Ok(StreamEvent::TextDelta(t)) => assert!(!t.is_empty()),
        }
    }
}
