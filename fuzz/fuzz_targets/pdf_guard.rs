//! The checks an uploaded PDF passes before the parser sees it (knowledge extraction):
//! the raw stream scan, lopdf's load, the page tree and the byte and operator budgets.
//! Any bytes: an answer, never a hang or a blow-up.
//!
//! The guard turns a panic inside lopdf into `PdfUnreadable` (`catch_unwind`), as the
//! server does; libFuzzer's panic hook would abort before that, so this target puts a
//! quiet hook back once. A hang or an allocation past the RSS limit still fails the run.
#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;

static QUIET_PANICS: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    if let Err(e) = agentchat::fuzzing::pdf_guard(data) {
        assert!(!e.to_string().is_empty());
        assert!(!e.code().is_empty());
    }
});
