//! The checks an uploaded PDF passes before the parser sees it (knowledge extraction):
//! the raw stream scan, lopdf's load, the page tree and the byte and operator budgets.
//! Any bytes: an answer, never a panic, a hang or a blow-up.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentchat::fuzzing::pdf_guard(data) {
        assert!(!e.to_string().is_empty());
        assert!(!e.code().is_empty());
    }
});
