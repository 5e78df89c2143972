//! OpenAI chat-completions stream: SSE parsing and tool-call assembly by index.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "sse_common.rs"]
mod sse_common;

fuzz_target!(|data: &[u8]| {
    if let Some((chunk, body)) = sse_common::split(data) {
        let items = agentchat::fuzzing::openai_sse(body, chunk);
        sse_common::check(&items);
        // Where the chunks split must not change what is decoded.
        let whole = agentchat::fuzzing::openai_sse(body, body.len().max(1));
        assert_eq!(format!("{items:?}"), format!("{whole:?}"));
    }
});
