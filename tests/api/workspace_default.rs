//! With no `tools.workspace_dir`, users' files go to a stable place, the user's data directory
//! (issue 42.11), not `data/workspaces` below wherever the server was started: a server
//! process started with `HOME` set and no workspace setting stores an upload under
//! `$HOME/.local/share/agentchat/workspaces`.

use std::path::{Path, PathBuf};

use agentchat_tests::fake_upstream::FakeUpstream;
use agentchat_tests::*;

#[tokio::test]
async fn without_a_setting_files_live_in_the_users_data_directory() {
    let db = fresh_database_guard().await;
    let fake = FakeUpstream::start().await;
    let home = std::env::temp_dir().join(format!("agentchat-home-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&home).unwrap();
    let child = crate::budget::start_child_with(
        db.url(),
        &fake.base_url_openai(),
        &[
            ("HOME", home.to_str().unwrap()),
            // Relative: ignored, as the XDG specification says.
            ("XDG_DATA_HOME", "relative/data"),
            ("AGENTCHAT_CHILD_DEFAULT_WORKSPACE", "1"),
        ],
    );
    let mut app = TestApp::builder().database(db.url()).start().await;
    app.address = child.address.clone();
    let ann = app.signed_up("ann").await;
    app.upload(&ann.access, "notes.txt", "kept").await;

    let found = files_named(&home.join(".local/share/agentchat/workspaces"), "notes.txt");
    assert_eq!(found.len(), 1, "under {}: {found:?}", home.display());
    assert_eq!(std::fs::read_to_string(&found[0]).unwrap(), "kept");
    drop(child);
    let _ = std::fs::remove_dir_all(&home);
}

fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_named(&p, name));
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
    out
}
