//! The calculator's tokenizer, Pratt parser and evaluator: any string a model sends.
#![no_main]

use agentchat::tools::builtin::calculator::evaluate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(expression) = std::str::from_utf8(data) {
        if let Ok(x) = evaluate(expression) {
            // Overflow and domain errors are errors, never NaN or infinity.
            assert!(x.is_finite(), "{expression:?} gave {x}");
        }
    }
});
