//! The layering rules, checked over the source: data flows one way, route -> (auth) ->
//! turn/budget/tools -> llm/db, and the lower rooms know nothing of the upper ones. Each
//! lower module lists what it may use (`crate::x` in code, comments and `mod tests` blocks
//! left out); anything else it names fails this test with the file and the line.
//!
//! | module | may use |
//! |---|---|
//! | `domain`, `budget`, `shard` | nothing of the crate: the words every layer shares |
//! | `sandbox` | nothing of the crate: limited child processes, for any caller |
//! | `config` | `domain`, `security` (origin settings), `tools` (the tools' settings types) |
//! | `db` | `domain`, `config`, `budget` (periods), `shard`: no HTTP, no turn, no provider |
//! | `llm` | `domain`, `config`, `shard`: no database, no tools, no routes |
//! | `cluster` | `db`, `domain`, `config`: the turn plugs in through `channel::Subscriber` |
//! | `tools` | `db`, `domain`, `config`, `cluster`, `shard`, `telemetry`: no provider, no HTTP errors |
//! | `accounts` | `db`, `domain`, `cluster`, `tools` |
//! | `sharing` | `db`, `domain`, `tools` (the owner's workspace files): links, views, copies |
//! | `assistants` | `db`, `domain` |
//! | `memory` | `config`, `db`, `domain`, `tools` |
//! | `turn` | the above and `auth`, `llm`, `metrics`, `telemetry`: never `error`, `routes`, `state` |
//!
//! And two that are about one room's insides: `turn::sql` and `turn::testing` are the turn's
//! own (the database tests outside the crate reach them too), and `actix_web` is for the
//! HTTP side only.

use std::path::{Path, PathBuf};

/// The modules each lower module may use.
const ALLOWED: &[(&str, &[&str])] = &[
    ("domain", &[]),
    ("budget", &[]),
    ("shard", &[]),
    ("sandbox", &[]),
    ("config", &["domain", "security", "tools"]),
    ("db", &["domain", "config", "budget", "shard"]),
    ("llm", &["domain", "config", "shard"]),
    ("cluster", &["db", "domain", "config"]),
    (
        "tools",
        &["db", "domain", "config", "cluster", "shard", "telemetry"],
    ),
    ("accounts", &["db", "domain", "cluster", "tools"]),
    ("assistants", &["db", "domain"]),
    ("memory", &["config", "db", "domain", "tools"]),
    ("sharing", &["db", "domain", "tools"]),
    (
        "knowledge",
        &[
            "budget", "config", "db", "domain", "llm", "metrics", "sandbox", "tools",
        ],
    ),
    (
        "turn",
        &[
            "assistants",
            "auth",
            "budget",
            "cluster",
            "config",
            "db",
            "domain",
            "knowledge",
            "llm",
            "memory",
            "metrics",
            "shard",
            "telemetry",
            "tools",
        ],
    ),
];

/// Modules that must not use `actix_web`: they know nothing of HTTP serving.
const NO_HTTP: &[&str] = &[
    "domain",
    "budget",
    "db",
    "knowledge",
    "sandbox",
    "sharing",
    "llm",
    "cluster",
    "tools",
    "turn",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The top-level module a file belongs to (`turn/sql/begin.rs` -> `turn`).
fn module_of(relative: &Path) -> String {
    let first = relative.components().next();
    let name = first.map_or_else(Default::default, |c| c.as_os_str().to_string_lossy());
    name.trim_end_matches(".rs").to_owned()
}

/// The code lines of a file, numbered: comments, and the unit tests at its end, left out.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    text[..end]
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.starts_with("//"))
        .collect()
}

/// The crate modules a line names: `crate::x` paths and `use crate::{x, y}` groups.
fn named_modules(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inside = group.split('}').next().unwrap_or("");
            for item in inside.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

/// Where the rules break: `file:line: message`.
fn violations() -> std::io::Result<Vec<String>> {
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all)?;
    let mut found = Vec::new();
    for path in all {
        let relative = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
        let name = relative.to_string_lossy().into_owned();
        if name.ends_with("_tests.rs") || name == "layering_tests.rs" {
            continue;
        }
        let module = module_of(&relative);
        let text = std::fs::read_to_string(&path)?;
        let allowed = ALLOWED.iter().find(|(m, _)| *m == module).map(|(_, a)| *a);
        for (n, line) in code_lines(&text) {
            for used in named_modules(line) {
                if used == module || used == "self" || used == "super" {
                    continue;
                }
                if let Some(allowed) = allowed {
                    if !allowed.contains(&used.as_str()) {
                        found.push(format!("{name}:{n}: `{module}` uses `crate::{used}`"));
                    }
                }
            }
            let inside_turn = line.contains("crate::turn::sql") || line.contains("turn::testing");
            if module != "turn" && inside_turn {
                found.push(format!(
                    "{name}:{n}: the turn's insides used from `{module}`"
                ));
            }
            if NO_HTTP.contains(&module.as_str()) && line.contains("actix_web") {
                found.push(format!("{name}:{n}: `{module}` uses actix_web"));
            }
        }
    }
    Ok(found)
}

#[test]
fn the_layering_rules_hold() -> std::io::Result<()> {
    let found = violations()?;
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
    Ok(())
}

#[test]
fn the_check_sees_paths_groups_and_skips_comments() {
    assert_eq!(
        named_modules("use crate::{db::models, llm::ChatMessage};"),
        ["db", "llm"]
    );
    assert_eq!(
        named_modules("let x = crate::turn::sql::open(c, crate::error::X);"),
        ["turn", "error"]
    );
    let lines = code_lines(
        "// crate::routes\nuse crate::db;\n#[cfg(test)]\nmod tests {\nuse crate::routes;\n}",
    );
    assert_eq!(lines, [(2, "use crate::db;")]);
    // Every module the rules name exists, so a rename cannot void a rule.
    for (module, allowed) in ALLOWED {
        for m in std::iter::once(module).chain(allowed.iter()) {
            let dir = src().join(m);
            let file = src().join(format!("{m}.rs"));
            assert!(dir.is_dir() || file.is_file(), "no module `{m}`");
        }
    }
}
