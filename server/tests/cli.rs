//! The `agentchat` command as an operator runs it: `--help`, `config check`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn agentchat(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentchat"));
    cmd.args(args).env_clear();
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn help_lists_every_command_and_the_most_used_settings() {
    let out = agentchat(&["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out);
    for word in [
        "serve",
        "migrate",
        "create-admin",
        "config",
        "AGENTCHAT_LLM_PROVIDER",
        "DATABASE_URL",
    ] {
        assert!(help.contains(word), "{word} missing from --help:\n{help}");
    }
}

#[test]
fn config_check_shows_each_origin_and_hides_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agentchat.toml");
    std::fs::write(&file, "[llm]\nmax_iterations = 4\n").unwrap();
    let out = agentchat(
        &["--config", file.to_str().unwrap(), "config", "check"],
        &[
            ("AGENTCHAT_BIND", "127.0.0.1:9999"),
            (
                "AGENTCHAT_JWT_SECRET",
                "a-canary-secret-that-is-long-enough-1234",
            ),
            ("AGENTCHAT_LLM_MODLE", "typo"),
        ],
    );
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("# env AGENTCHAT_BIND"), "{report}");
    assert!(report.contains("llm.max_iterations"), "{report}");
    assert!(
        report.contains(&format!("# file {}", file.display())),
        "{report}"
    );
    assert!(report.contains("# default"), "{report}");
    assert!(!report.contains("a-canary-secret"), "{report}");
    assert!(
        report.contains("did you mean AGENTCHAT_LLM_MODEL"),
        "{report}"
    );
}

#[test]
fn config_check_fails_on_an_invalid_value_or_an_unknown_key() {
    let bad = agentchat(&["config", "check"], &[("AGENTCHAT_LLM_PROVIDER", "gpt")]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("AGENTCHAT_LLM_PROVIDER"),
        "{}",
        text(&bad)
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agentchat.toml");
    std::fs::write(&file, "[database]\npool_sise = 4\n").unwrap();
    let typo = agentchat(
        &["--config", file.to_str().unwrap(), "config", "check"],
        &[],
    );
    assert!(!typo.status.success());
    assert!(
        text(&typo).contains("did you mean `database.pool_size`"),
        "{}",
        text(&typo)
    );
}
