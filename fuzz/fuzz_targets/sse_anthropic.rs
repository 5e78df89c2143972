//! Anthropic Messages stream: SSE parsing and tool_use assembly by content block.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "sse_common.rs"]
mod sse_common;

fuzz_target!(|data: &[u8]| {
    if let Some((chunk, body)) = sse_common::split(data) {
        let items = agentchat::fuzzing::anthropic_sse(body, chunk);
        sse_common::check(&items);
        // Where the chunks split must not change what is decoded.
        let whole = agentchat::fuzzing::anthropic_sse(body, body.len().max(1));
        assert_eq!(format!("{items:?}"), format!("{whole:?}"));
    }
});
