//! Tool-argument validation against JSON Schema: an admin's schema (custom tools) and the
//! model's arguments are both untrusted. Input: `schema \0 arguments`.
#![no_main]

use agentchat::tools::ArgsValidator;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, args) = text
        .split_once('\0')
        .unwrap_or((r#"{"type":"object"}"#, text));
    let Ok(schema) = serde_json::from_str::<Value>(schema) else {
        return;
    };
    let Ok(args) = serde_json::from_str::<Value>(args) else {
        return;
    };
    if let Ok(validator) = ArgsValidator::new(&schema) {
        let first = validator.validate(&args).is_ok();
        // Deterministic: the same arguments get the same verdict.
        assert_eq!(first, validator.validate(&args).is_ok());
    }
});
