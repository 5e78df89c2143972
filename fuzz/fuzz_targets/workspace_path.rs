//! Workspace path parsing, the first line of defence of every file route and tool.
#![no_main]

use agentchat::files::WorkspacePath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = WorkspacePath::parse(raw) {
        let s = p.as_str();
        assert!(
            !s.is_empty() && !s.starts_with('/') && !s.ends_with('/'),
            "{raw:?} -> {s:?}"
        );
        assert!(!s.contains('\\') && !s.contains('\0'), "{raw:?} -> {s:?}");
        for part in s.split('/') {
            assert!(
                !part.is_empty() && part != "." && part != "..",
                "{raw:?} -> {s:?}"
            );
        }
        assert!(p.to_path().is_relative());
        // Normal form: parsing what it prints gives it back.
        assert_eq!(WorkspacePath::parse(s).ok(), Some(p.clone()), "{raw:?}");
    }
});
