#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::collections::HashMap;

fn load(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    load_file_env(None, vars)
}

fn load_file_env(toml: Option<&str>, vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let file = toml.map(|text| {
        let path =
            std::env::temp_dir().join(format!("agentchat-cfg-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&path, text).unwrap();
        path
    });
    let s = Settings::load_from(file.as_deref(), |k| map.get(k).cloned());
    if let Some(p) = file {
        let _ = std::fs::remove_file(p);
    }
    s
}

#[test]
fn defaults_point_at_local_postgres() {
    let s = load(&[]).unwrap();
    assert_eq!(s.database.url.expose(), DEFAULT_DATABASE_URL);
    assert_eq!(s.bind, "127.0.0.1:8080");
    assert!(s.auth.jwt_secret.is_none());
    assert_eq!(s.llm.provider, ProviderKind::Demo);
    assert_eq!(s.llm.model, "demo");
    assert_eq!(s.llm.models, ["demo"]);
    assert_eq!(s.llm.max_iterations, 8);
    assert_eq!(s.database.hold_sweep_interval, Duration::from_secs(30));
    assert!(s.auth.max_concurrent_hashes() >= 2);
}

#[test]
fn out_of_range_values_are_refused_naming_the_variable() {
    let every =
        |v: &str| load(&[("AGENTCHAT_HOLD_SWEEP_SECS", v)]).map(|s| s.database.hold_sweep_interval);
    assert_eq!(every("86400").unwrap(), Duration::from_secs(86400));
    let zero = every("0").unwrap_err().to_string();
    assert!(zero.contains("AGENTCHAT_HOLD_SWEEP_SECS"), "{zero}");
    let soon = every("soon").unwrap_err().to_string();
    assert!(soon.contains("database.hold_sweep_secs"), "{soon}");
    assert!(soon.contains("AGENTCHAT_HOLD_SWEEP_SECS"), "{soon}");
    let it = load(&[("AGENTCHAT_MAX_ITERATIONS", "1000")])
        .unwrap_err()
        .to_string();
    assert!(it.contains("between 1 and 100"), "{it}");
}

#[test]
fn llm_settings_from_env() {
    let s = load(&[
        ("AGENTCHAT_LLM_PROVIDER", "openai"),
        ("AGENTCHAT_LLM_BASE_URL", "http://127.0.0.1:9/v1/"),
        ("AGENTCHAT_LLM_API_KEY", "sk-secret-key-value"),
        ("AGENTCHAT_LLM_MODEL", "qwen"),
        ("AGENTCHAT_LLM_MODELS", "qwen, llama,qwen"),
    ])
    .unwrap();
    assert_eq!(s.llm.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(s.llm.models, ["qwen", "llama"]);
    assert!(!format!("{s:?}").contains("sk-secret-key-value"));
    assert!(load(&[("AGENTCHAT_LLM_PROVIDER", "gpt")]).is_err());
    let vendor = load(&[("AGENTCHAT_LLM_PROVIDER", "anthropic")]).unwrap();
    assert_eq!(vendor.llm.base_url, "https://api.anthropic.com");
    assert_eq!(vendor.llm.model, "claude-sonnet-4-5");
}

#[test]
fn short_jwt_secret_is_refused() {
    let err = load(&[("AGENTCHAT_JWT_SECRET", "short")]).unwrap_err();
    assert!(err.to_string().contains("at least 32 bytes"), "{err}");
}

#[test]
fn a_numeric_secret_is_still_a_string() {
    let s = load(&[(
        "AGENTCHAT_JWT_SECRET",
        "12345678901234567890123456789012345",
    )])
    .unwrap();
    assert!(s.auth.jwt_secret.is_some());
}

#[test]
fn secrets_never_appear_in_debug_output_or_the_report() {
    let vars = [
        (
            "AGENTCHAT_JWT_SECRET",
            "0123456789abcdef0123456789abcdef-very-secret",
        ),
        (
            "DATABASE_URL",
            "postgres://app:hunter2pass@db:5432/agentchat",
        ),
        ("AGENTCHAT_METRICS_TOKEN", "metrics-token-canary"),
        ("AGENTCHAT_LLM_API_KEY", "sk-canary"),
    ];
    let s = load(&vars).unwrap();
    let dbg = format!("{s:?}");
    let env: HashMap<_, _> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let report = report::render(&report::entries(&s, None, |k| env.get(k).cloned()));
    for text in [&dbg, &report] {
        for secret in [
            "very-secret",
            "hunter2pass",
            "metrics-token-canary",
            "sk-canary",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    assert!(dbg.contains("REDACTED"), "{dbg}");
    assert!(report.contains("auth.jwt_secret"), "{report}");
    assert!(
        report.contains("\"<hidden>\"  # env AGENTCHAT_JWT_SECRET"),
        "{report}"
    );
}

#[test]
fn bad_registration_value_is_refused() {
    assert!(load(&[("AGENTCHAT_REGISTRATION", "maybe")]).is_err());
    let s = load(&[("AGENTCHAT_REGISTRATION", "closed")]).unwrap();
    assert_eq!(s.auth.registration, Registration::Closed);
}

#[test]
fn file_is_overridden_by_env_and_every_section_is_reachable_from_the_file() {
    let toml = r#"
bind = "0.0.0.0:9000"
[auth]
registration = "closed"
cookie_secure = false
[tools]
workspace_dir = "/srv/ws"
[tools.quota]
max_bytes = 1000000
max_file_bytes = 1000
[tools.http]
allowed_domains = ["example.com", "docs.rs"]
[telemetry]
metrics_token = "file-metrics-token-value"
grafana_url = "http://grafana:3000"
[llm]
provider = "openai"
model = "qwen"
"#;
    let s = load_file_env(Some(toml), &[("AGENTCHAT_BIND", "127.0.0.1:9001")]).unwrap();
    assert_eq!(s.bind, "127.0.0.1:9001");
    assert_eq!(s.auth.registration, Registration::Closed);
    assert!(!s.auth.cookie_secure);
    assert_eq!(s.tools.workspace_dir, std::path::PathBuf::from("/srv/ws"));
    assert_eq!(s.tools.quota.max_bytes, 1_000_000);
    assert_eq!(s.tools.http.allowed_domains, ["example.com", "docs.rs"]);
    assert!(s.telemetry.metrics_token.is_some());
    assert_eq!(s.llm.base_url, "https://api.openai.com/v1");
    assert_eq!(s.llm.models, ["qwen"]);
}

#[test]
fn unknown_keys_are_errors_that_name_the_closest_valid_key() {
    let err = load_file_env(Some("[llm]\nmax_iteration = 3\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("`llm.max_iteration`"), "{err}");
    assert!(err.contains("did you mean `llm.max_iterations`"), "{err}");
    let top = load_file_env(Some("bnid = \"x:1\"\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(top.contains("did you mean `bind`"), "{top}");
}

#[test]
fn a_missing_or_broken_file_is_an_error() {
    let missing = Settings::load_from(Some(Path::new("/nonexistent/agentchat.toml")), |_| None);
    assert!(matches!(missing, Err(ConfigError::Read { .. })));
    let broken = load_file_env(Some("bind = \n"), &[])
        .unwrap_err()
        .to_string();
    assert!(broken.contains("config file"), "{broken}");
}

#[test]
fn the_report_says_where_each_value_came_from() {
    let path = std::env::temp_dir().join(format!("agentchat-cfg-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&path, "[llm]\nmax_iterations = 4\n").unwrap();
    let env = |k: &str| (k == "AGENTCHAT_BIND").then(|| "127.0.0.1:9999".to_owned());
    let s = Settings::load_from(Some(&path), env).unwrap();
    let entries = report::entries(&s, Some(&path), env);
    let origin = |key: &str| {
        entries
            .iter()
            .find(|e| e.key == key)
            .unwrap()
            .origin
            .clone()
    };
    assert_eq!(
        origin("bind"),
        report::Origin::Environment("AGENTCHAT_BIND")
    );
    assert!(matches!(
        origin("llm.max_iterations"),
        report::Origin::File(_)
    ));
    assert_eq!(origin("llm.max_output_tokens"), report::Origin::Default);
    let _ = std::fs::remove_file(path);
}

#[test]
fn every_setting_has_an_environment_variable_and_every_variable_a_setting() {
    let defaults = serde_json::to_value(Settings::default()).unwrap();
    let keys: Vec<String> = report::leaves(&defaults)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for key in &keys {
        assert!(
            env::var_for(key).is_some(),
            "no environment variable sets `{key}`"
        );
    }
    for v in env::all() {
        assert!(
            keys.iter().any(|k| k == v.key),
            "{} names unknown key {}",
            v.name,
            v.key
        );
    }
}

#[test]
fn unknown_agentchat_variables_are_reported_with_a_suggestion() {
    let found = env::unknown(
        ["AGENTCHAT_LLM_MODLE", "AGENTCHAT_CONFIG", "HOME"]
            .iter()
            .map(|s| s.to_string()),
    );
    assert_eq!(
        found,
        vec![(
            "AGENTCHAT_LLM_MODLE".to_owned(),
            Some("AGENTCHAT_LLM_MODEL")
        )]
    );
}

/// The repository's top directory.
fn repo_file(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

fn default_leaves() -> Vec<(String, serde_json::Value)> {
    report::leaves(&serde_json::to_value(Settings::default()).unwrap())
}

#[test]
fn the_example_file_lists_every_setting_with_its_default() {
    let path = repo_file("agentchat.example.toml");
    let loaded = Settings::load_from(Some(&path), |_| None).unwrap();
    assert_eq!(
        serde_json::to_value(&loaded).unwrap(),
        serde_json::to_value(Settings::default()).unwrap(),
        "agentchat.example.toml does not load to the built-in defaults"
    );
    // Settings without a default are listed commented out (`# key = example`).
    // A commented `# [[name]]` block is an example of a list of tables: its lines stay
    // comments, and the list counts as listed.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut in_example_block = false;
    let mut table_lists = Vec::new();
    let mut kept = Vec::new();
    for l in text.lines() {
        if let Some(name) = l.strip_prefix("# [[").and_then(|r| r.strip_suffix("]]")) {
            in_example_block = true;
            if !table_lists.iter().any(|t| t == name) {
                table_lists.push(name.to_owned());
            }
            kept.push(l);
            continue;
        }
        if in_example_block {
            in_example_block = l.starts_with('#');
            kept.push(l);
            continue;
        }
        let setting = l.strip_prefix("# ").filter(|rest| {
            rest.split_once(" = ").is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            })
        });
        kept.push(setting.unwrap_or(l));
    }
    let uncommented = kept.join("\n");
    let listed: toml::Table = uncommented.parse().unwrap();
    let listed = report::leaves(&serde_json::to_value(listed).unwrap());
    let mut listed: Vec<String> = listed
        .into_iter()
        .map(|(k, _)| k)
        .chain(table_lists)
        .collect();
    let mut code: Vec<String> = default_leaves().into_iter().map(|(k, _)| k).collect();
    listed.sort();
    code.sort();
    assert_eq!(
        listed, code,
        "agentchat.example.toml and the code list different settings"
    );
}

#[test]
fn the_readme_settings_table_agrees_with_the_code() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let rows: Vec<Vec<String>> = readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            l.split(" | ")
                .map(|c| c.trim_matches(['|', ' ']).to_owned())
                .collect()
        })
        .filter(|cells: &Vec<String>| cells.len() >= 4 && cells[1].starts_with('`'))
        .collect();
    let strip = |c: &str| c.trim_matches('`').to_owned();
    for (key, value) in default_leaves() {
        let var = env::var_for(&key).unwrap().name;
        let row = rows
            .iter()
            .find(|r| strip(&r[1]) == key)
            .unwrap_or_else(|| panic!("README settings table has no row for `{key}`"));
        assert_eq!(
            strip(&row[0]),
            var,
            "README names the wrong variable for `{key}`"
        );
        let shown = match &value {
            serde_json::Value::Null => "unset".to_owned(),
            v => format!("`{v}`"),
        };
        if row[2] != "built in" {
            assert_eq!(
                row[2], shown,
                "README default of `{key}` differs from the code"
            );
        }
    }
    for row in &rows {
        let key = strip(&row[1]);
        assert!(
            env::var_for(&key).is_some(),
            "README lists `{key}`, which is not a setting"
        );
    }
}

#[test]
fn security_settings_come_from_the_file_or_the_environment() {
    let s = load_file_env(
        Some("[security]\ntrusted_proxies = [\"10.0.0.0/8\"]\nallowed_origins = [\"https://Chat.Example.com/\"]\n"),
        &[("AGENTCHAT_MAX_CONCURRENT_UPLOADS", "3")],
    )
    .unwrap();
    assert_eq!(s.security.trusted_proxies.len(), 1);
    assert!(s.security.trusted_proxies[0].contains("10.1.2.3".parse().unwrap()));
    assert_eq!(s.security.allowed_origins, ["https://chat.example.com"]);
    assert_eq!(s.security.max_concurrent_uploads, 3);
    let env = load(&[("AGENTCHAT_TRUSTED_PROXIES", "127.0.0.1, ::1/128")]).unwrap();
    assert_eq!(env.security.trusted_proxies.len(), 2);
    let bad = load(&[("AGENTCHAT_TRUSTED_PROXIES", "10.0.0.0/99")]).unwrap_err();
    assert!(
        bad.to_string().contains("AGENTCHAT_TRUSTED_PROXIES"),
        "{bad}"
    );
}

#[test]
fn mcp_servers_come_from_the_file_or_the_environment_and_their_secrets_stay_hidden() {
    let toml = r#"
[[mcp_servers]]
name = "time"
command = "mcp-server-time"
env = { TOKEN = "stdio-env-canary" }

[[mcp_servers]]
name = "tickets"
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer header-canary" }
forward_identity = true
"#;
    let s = load_file_env(Some(toml), &[]).unwrap();
    assert_eq!(s.mcp_servers.len(), 2);
    assert!(s.mcp_servers[1].forward_identity);
    let report = report::render(&report::entries(&s, None, |_| None));
    for canary in ["stdio-env-canary", "header-canary"] {
        assert!(!report.contains(canary), "{report}");
        assert!(!format!("{s:?}").contains(canary));
    }
    let env = load(&[(
        "AGENTCHAT_MCP_SERVERS",
        r#"[{"name": "docs", "url": "http://127.0.0.1:9/mcp"}]"#,
    )])
    .unwrap();
    assert_eq!(env.mcp_servers[0].name, "docs");
    let bad = load(&[("AGENTCHAT_MCP_SERVERS", "[{")]).unwrap_err();
    assert!(bad.to_string().contains("AGENTCHAT_MCP_SERVERS"), "{bad}");
    let twice = load_file_env(
        Some("[[mcp_servers]]\nname = \"a\"\nurl = \"http://x/\"\n[[mcp_servers]]\nname = \"a\"\nurl = \"http://y/\"\n"),
        &[],
    )
    .unwrap_err();
    assert!(twice.to_string().contains("twice"), "{twice}");
}
