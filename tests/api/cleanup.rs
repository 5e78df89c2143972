//! The suite cleans up after itself: a test server's database and workspace are gone once
//! the last server using them is dropped.

use agentchat_tests::*;

#[tokio::test]
async fn a_dropped_test_server_leaves_no_database_or_workspace_behind() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("tidy").await;
    let r = app
        .client
        .put(app.url("/api/files/notes.txt"))
        .bearer_auth(&s.access)
        .body("kept until the test ends")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let name = app.database_url.rsplit('/').next().unwrap().to_owned();
    let workspace = app.workspace_dir.clone();
    let second = TestApp::builder().database(&app.database_url).start().await;
    drop(app);
    assert!(
        test_database_exists(&name).await,
        "dropped while a server still used it"
    );
    drop(second);
    assert!(!test_database_exists(&name).await, "{name} left behind");
    assert!(!workspace.exists(), "{} left behind", workspace.display());
}
