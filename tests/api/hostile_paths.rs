//! Hostile input: over 100 path-traversal payloads against every file route
//! (GET/PUT/DELETE /api/files/{path}) and every file tool (read_file, write_file,
//! delete_file, list_files, csv_stats). Canary files outside the attacker's workspace
//! (beside it, and in another user's) are never read, changed or removed.

use std::collections::BTreeSet;
use std::path::Path;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::json;

const ROOT_CANARY: &str = "ROOT-CANARY-7d1e";
const VICTIM_CANARY: &str = "VICTIM-CANARY-93ab";

/// The payloads: traversal units × depths × targets, absolute forms and oddities.
fn payloads(victim: uuid::Uuid) -> Vec<String> {
    let units = [
        "../",
        "..%2F",
        "..%2f",
        "%2e%2e/",
        "%2E%2E%2F",
        ".%2e/",
        "%2e./",
        "..%5c",
        "..\\",
        "....//",
        "..;/",
        "%252e%252e%252f",
        "%c0%ae%c0%ae/",
        "..%c0%af",
        "\u{ff0e}\u{ff0e}/",
        "..%00/",
        ".../",
    ];
    let targets = [
        "outside-canary.txt".to_owned(),
        format!("{victim}/notes.txt"),
    ];
    let mut out = Vec::new();
    for unit in units {
        for depth in 1..=3 {
            for target in &targets {
                out.push(format!("{}{target}", unit.repeat(depth)));
            }
        }
    }
    for target in &targets {
        for prefix in [
            "/",
            "%2F",
            "//",
            "file:///",
            "~/",
            "./../",
            "a/../../",
            "a/%2e%2e/%2e%2e/",
        ] {
            out.push(format!("{prefix}{target}"));
        }
    }
    out.extend(
        [
            "..",
            ".",
            "%2e%2e",
            "/etc/passwd",
            "../../../../../../etc/passwd",
            ".tmp/x",
            "../.tmp/x",
            "notes.txt\0.png",
            "notes.txt%00",
            "a/./b",
            "a//b",
            "\\\\server\\share",
            "C:\\Windows\\win.ini",
            "%u002e%u002e/outside-canary.txt",
        ]
        .map(String::from),
    );
    out
}

/// Files (relative paths) under `dir`, recursively.
fn tree(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p.clone());
            }
            out.insert(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out
}

struct Canaries {
    root: std::path::PathBuf,
    victim_dir: std::path::PathBuf,
    before: BTreeSet<String>,
}

impl Canaries {
    fn assert_intact(&self, attacker: uuid::Uuid) {
        let root_file = self.root.join("outside-canary.txt");
        assert_eq!(std::fs::read_to_string(root_file).unwrap(), ROOT_CANARY);
        let victim_file = self.victim_dir.join("notes.txt");
        assert_eq!(std::fs::read_to_string(victim_file).unwrap(), VICTIM_CANARY);
        // Nothing appeared or vanished outside the attacker's own directory.
        let mine = attacker.to_string();
        let now: BTreeSet<String> = tree(&self.root)
            .into_iter()
            .filter(|p| !p.starts_with(&mine) && !p.starts_with(".tmp"))
            .collect();
        let before: BTreeSet<String> = self
            .before
            .iter()
            .filter(|p| !p.starts_with(&mine) && !p.starts_with(".tmp"))
            .cloned()
            .collect();
        assert_eq!(
            now, before,
            "files outside the attacker's workspace changed"
        );
    }
}

async fn setup(app: &TestApp) -> (Session, Session, Canaries) {
    let victim = app.signed_up("victim").await;
    let attacker = app.signed_up("attacker").await;
    let r = app
        .client
        .put(app.url("/api/files/notes.txt"))
        .bearer_auth(&victim.access)
        .body(VICTIM_CANARY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // The attacker's directory exists (and holds a decoy of the same name).
    let r = app
        .client
        .put(app.url("/api/files/mine.txt"))
        .bearer_auth(&attacker.access)
        .body("mine")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let root = app.workspace_dir.clone();
    std::fs::write(root.join("outside-canary.txt"), ROOT_CANARY).unwrap();
    let canaries = Canaries {
        victim_dir: root.join(victim.user_id.to_string()),
        before: tree(&root),
        root,
    };
    (victim, attacker, canaries)
}

#[tokio::test]
async fn traversal_payloads_against_the_file_routes_reach_nothing_outside() {
    let app = TestApp::builder().start().await;
    let (victim, attacker, canaries) = setup(&app).await;
    let list = payloads(victim.user_id);
    assert!(list.len() >= 100, "{}", list.len());
    for p in &list {
        let url = format!("{}/api/files/{p}", app.address);
        for method in ["GET", "PUT", "DELETE"] {
            let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let mut req = app.client.request(m, &url).bearer_auth(&attacker.access);
            if method == "PUT" {
                req = req.body("overwritten by the attacker");
            }
            // Some payloads are not even valid URLs for the client; they cannot be sent.
            let Ok(r) = req.send().await else { continue };
            let status = r.status().as_u16();
            let body = r.text().await.unwrap_or_default();
            assert!(status < 500, "{method} {p:?}: {status} {body}");
            assert!(
                !body.contains("CANARY"),
                "{method} {p:?} read a canary: {body}"
            );
        }
    }
    canaries.assert_intact(attacker.user_id);
}

#[tokio::test]
async fn traversal_payloads_against_the_file_tools_reach_nothing_outside() {
    let fake = FakeUpstream::start().await;
    let (app, [_admin]) = crate::tools::app_with(&fake, vec![], 64 * 1024)
        .start_as(["boss"])
        .await;
    let (victim, attacker, canaries) = setup(&app).await;
    fake.set_default(Some(Reply::text("noted").scripted()));
    let list = payloads(victim.user_id);
    let mut calls = Vec::new();
    for (i, p) in list.iter().enumerate() {
        calls.push(("read_file", json!({"path": p})));
        calls.push((
            "write_file",
            json!({"path": p, "content": "pwned", "overwrite": true}),
        ));
        calls.push(("delete_file", json!({"path": p})));
        calls.push(("csv_stats", json!({"path": p, "operation": "count"})));
        if i % 4 == 0 {
            calls.push(("list_files", json!({"prefix": p})));
        }
    }
    let mut results = 0;
    for batch in calls.chunks(24) {
        let batch: Vec<(String, String, String)> = batch
            .iter()
            .enumerate()
            .map(|(i, (name, args))| (format!("c{i}"), (*name).to_owned(), args.to_string()))
            .collect();
        fake.push(Reply::ToolCalls {
            calls: batch.clone(),
            usage: None,
        });
        let conv = app.new_conversation(&attacker.access).await;
        let events = app.chat(&attacker.access, &conv, "do it").await;
        for e in events.iter().filter(|e| e.event == "tool_result") {
            results += 1;
            let text = e.data.to_string();
            assert!(!text.contains("CANARY"), "a tool read a canary: {text}");
            assert!(
                !text.contains(&app.workspace_dir.display().to_string()),
                "server path leaked: {text}"
            );
        }
    }
    assert_eq!(results, calls.len(), "every call ran and answered");
    canaries.assert_intact(attacker.user_id);
}
