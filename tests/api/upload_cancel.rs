//! Deleting a path stops an upload of it still arriving. The browser cancels an upload by
//! aborting its request and deleting the path; when the body had already reached the server,
//! the write used to land after the delete and the file stayed (a flaky browser test showed
//! it). Now the delete marks the upload cancelled and it writes nothing.

use std::time::Duration;

use agentchat_tests::*;
use serde_json::Value;

async fn files(app: &TestApp, token: &str) -> Vec<String> {
    let listed: Value = app
        .get_as(token, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_delete_while_the_upload_arrives_leaves_no_file() {
    let (app, [s]) = TestApp::builder().start_as(["canceller"]).await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let upload = tokio::spawn(
        app.client
            .put(app.url("/api/files/big.log"))
            .bearer_auth(&s.access)
            .body(reqwest::Body::wrap_stream(stream))
            .send(),
    );
    tx.send(Ok(vec![b'x'; 64 * 1024])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The cancel's delete reaches the server before the end of the body.
    let r = app
        .delete_as(&s.access, "/api/files/big.log")
        .send()
        .await
        .unwrap();
    assert!(r.status() == 404 || r.status() == 204, "{}", r.status());
    tx.send(Ok(vec![b'x'; 1024])).await.unwrap();
    drop(tx);
    let answered = upload.await.unwrap().unwrap();
    expect_error(answered, 409, "upload_cancelled").await;
    assert!(files(&app, &s.access).await.is_empty());

    // The next upload of the path is not affected.
    app.upload(&s.access, "big.log", "again").await;
    assert_eq!(files(&app, &s.access).await, ["big.log"]);
}
