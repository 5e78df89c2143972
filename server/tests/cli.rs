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

/// Issue 41 finding 9: a password in a provider's `base_url` (the catalogue's or `[llm]`'s)
/// is never printed by `config check`.
#[test]
fn config_check_never_prints_a_password_in_a_base_url() {
    let providers = r#"[{"name": "oa", "kind": "openai",
        "base_url": "https://bob:hunter2-canary@llm.example.com/v1", "api_key": "sk-x"}]"#;
    let models = r#"[{"name": "gpt", "provider": "oa", "upstream_model": "gpt-4o"}]"#;
    let out = agentchat(
        &["config", "check"],
        &[
            ("AGENTCHAT_PROVIDERS", providers),
            ("AGENTCHAT_MODELS", models),
            ("AGENTCHAT_LLM_PROVIDER", "openai"),
            (
                "AGENTCHAT_LLM_BASE_URL",
                "https://eve:llm-canary@other.example.com/v1?api-key=query-canary",
            ),
        ],
    );
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("llm.example.com/v1"), "{report}");
    assert!(report.contains("other.example.com/v1"), "{report}");
    for secret in [
        "hunter2-canary",
        "llm-canary",
        "query-canary",
        "bob",
        "eve:",
    ] {
        assert!(!report.contains(secret), "{secret} in:\n{report}");
    }
}

/// Issue 42 item 11: a database that cannot be reached at start is retried with its cause
/// named on each attempt, not only "connecting".
#[test]
fn an_unreachable_database_is_retried_naming_the_cause_each_time() {
    use std::io::{BufRead, BufReader};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentchat"));
    cmd.arg("migrate")
        .env_clear()
        .env(
            "DATABASE_URL",
            "postgres://postgres:pw-canary@127.0.0.1:1/agentchat_nowhere",
        )
        .env("AGENTCHAT_LOG_FORMAT", "text")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let mut retries = Vec::new();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while retries.len() < 2 {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("retrying") => retries.push(line),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(retries.len(), 2, "{retries:?}");
    for line in &retries {
        assert!(line.contains("refused"), "{line}");
        assert!(line.contains("Connection refused"), "{line}");
        assert!(!line.contains("pw-canary"), "{line}");
    }
}

/// `secrets rotate` is documented in `--help` and refuses an old key that is not one before
/// touching the database.
#[test]
fn secrets_rotate_refuses_a_malformed_old_key() {
    let help = text(&agentchat(&["secrets", "rotate", "--help"], &[]));
    assert!(help.contains("--from"), "{help}");
    let out = agentchat(
        &["secrets", "rotate", "--from", "not base64!"],
        &[(
            "DATABASE_URL",
            "postgres://postgres@127.0.0.1:1/agentchat_nowhere",
        )],
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--from is not base64"),
        "{}",
        text(&out)
    );
    let bad = agentchat(
        &["config", "check"],
        &[("AGENTCHAT_SECRET_KEY", "c2hvcnQ=")],
    );
    assert!(!bad.status.success());
    assert!(text(&bad).contains("auth.secret_key"), "{}", text(&bad));
}
