//! `http_get`'s HTML-to-text reducer: any page a fetched site serves.
#![no_main]

use agentchat::tools::html_text::html_to_text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(html) = std::str::from_utf8(data) {
        let text = html_to_text(html);
        // Whitespace is collapsed: no run of more than one blank line.
        assert!(!text.contains("\n\n\n"), "{html:?} -> {text:?}");
    }
});
