//! The built-in tools' descriptions and schemas go with every model call that offers them, so
//! they are part of every turn's cost (README "Sizing budgets"). This keeps them short.

use crate::llm::estimate_tokens;
use crate::tools::builtin::BuiltinConfig;
use crate::tools::{HttpToolConfig, Registry};

use super::test_support::store;

/// What offering every built-in tool may cost, in (estimated) input tokens per model call.
const MAX_TOKENS_OF_ALL_SPECS: u64 = 1_400;

#[test]
fn every_builtin_spec_together_stays_within_its_token_allowance() {
    let (_dir, workspace) = store();
    let registry = Registry::builtin(&BuiltinConfig {
        workspace,
        http: HttpToolConfig::default(),
        fetch_rules: None,
    })
    .unwrap();
    let mut total = 0;
    let mut lines = Vec::new();
    for spec in registry.specs() {
        let text = format!("{}{}{}", spec.name, spec.description, spec.parameters);
        let tokens = estimate_tokens(&text);
        lines.push(format!("{:>5} {}", tokens, spec.name));
        total += tokens;
    }
    println!("{}\n{total} in all", lines.join("\n"));
    assert!(
        total <= MAX_TOKENS_OF_ALL_SPECS,
        "the built-in tool specs cost {total} tokens per model call (allowance \
         {MAX_TOKENS_OF_ALL_SPECS}):\n{}",
        lines.join("\n")
    );
}
