//! A collection's files under bad input and bad weather (issue 31): refused types, sizes and
//! empty files store nothing; binary text and broken PDFs fail with their reason; a failing
//! embeddings endpoint pauses the job, which then resumes without embedding anything twice;
//! wrong dimensions and a spent budget fail the file; a new version replaces the old one at
//! once, and nothing half indexed is ever found.

use std::time::Duration;

use agentchat_tests::fake_upstream::FakeUpstream;
use reqwest::Method;
use serde_json::json;

use crate::knowledge_support::{collection, on_fake, search, send, settled, strings, upload};

fn prose(topic: &str, sentences: usize) -> String {
    (0..sentences)
        .map(|i| format!("The {topic} rule number {i} says the {topic} matters on day {i}. "))
        .collect()
}

#[tokio::test]
async fn refused_files_store_nothing_and_broken_ones_fail_with_their_reason() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| s.knowledge.max_file_bytes = 4096)
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    let (status, body) = upload(&app, &ann.access, &c, "report.docx", b"PK\x03\x04".to_vec()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (415, Some("unsupported_file_type"))
    );
    assert!(
        body["error"]["message"].as_str().unwrap().contains(".pdf"),
        "{body}"
    );
    let (status, body) = upload(&app, &ann.access, &c, "empty.txt", b"  \n".to_vec()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("empty_file"))
    );
    let (status, body) = upload(&app, &ann.access, &c, "big.txt", vec![b'a'; 5000]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("file_too_large"))
    );
    let (_, listed) = send(
        &app,
        Method::GET,
        &ann.access,
        &format!("/api/collections/{c}"),
        None,
    )
    .await;
    assert_eq!(listed["files"], json!([]));

    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&[0u8; 64]);
    upload(&app, &ann.access, &c, "photo.txt", png).await;
    let f = settled(&app, &ann.access, &c, "photo.txt").await;
    assert_eq!(
        (f["state"].as_str(), f["error_code"].as_str()),
        (Some("failed"), Some("binary_file")),
        "{f}"
    );
    upload(
        &app,
        &ann.access,
        &c,
        "broken.pdf",
        b"%PDF-1.7\n1 0 obj << /Type /Cat".to_vec(),
    )
    .await;
    let f = settled(&app, &ann.access, &c, "broken.pdf").await;
    assert_eq!(f["state"], "failed", "{f}");
    assert!(
        f["error"].as_str().unwrap().to_lowercase().contains("pdf"),
        "{f}"
    );
    assert_eq!(
        strings(&app, "SELECT id::text AS v FROM chunks")
            .await
            .len(),
        0
    );
    assert_eq!(fake.embedding_request_count(), 0);
}

#[tokio::test]
async fn a_failing_endpoint_pauses_the_job_which_resumes_where_it_stopped() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake).start_as(["ann"]).await;
    let c = collection(&app, &ann.access, "Docs").await;
    // The first batch goes through, then two failures, then the rest.
    fake.set_embedding_delay(Some(Duration::from_millis(100)));
    upload(
        &app,
        &ann.access,
        &c,
        "rules.txt",
        prose("refund", 60).into_bytes(),
    )
    .await;
    for _ in 0..200 {
        if fake.embedding_request_count() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fake.fail_embeddings(2, 503);
    let f = settled(&app, &ann.access, &c, "rules.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
    let chunks = f["chunks"].as_u64().unwrap() as usize;
    assert!(chunks > 8, "{f}");
    // Every chunk embedded once: the failures cost retries, not work done again.
    assert_eq!(fake.embedded_input_count(), chunks);
    assert!(fake.embedding_request_count() >= chunks / 4 + 2);
    assert!(!search(&app, &ann.access, "refund rule", 5).await.is_empty());
}

#[tokio::test]
async fn wrong_dimensions_an_endpoint_that_stays_down_and_a_spent_budget_fail_the_file() {
    let fake = FakeUpstream::start().await;
    let (app, [ann, bob]) = on_fake(&fake)
        .settings(|s| s.knowledge.max_attempts = 2)
        .budget("bob", Some(5))
        .start_as(["ann", "bob"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    fake.embeddings_wrong_dims(Some(3));
    upload(
        &app,
        &ann.access,
        &c,
        "a.txt",
        prose("alpha", 5).into_bytes(),
    )
    .await;
    let f = settled(&app, &ann.access, &c, "a.txt").await;
    assert_eq!(
        (f["state"].as_str(), f["error_code"].as_str()),
        (Some("failed"), Some("embedding_failed"))
    );
    assert!(
        f["error"].as_str().unwrap().contains("3 dimensions; 256"),
        "{f}"
    );
    fake.embeddings_wrong_dims(None);
    fake.fail_embeddings(100, 500);
    upload(
        &app,
        &ann.access,
        &c,
        "b.txt",
        prose("beta", 5).into_bytes(),
    )
    .await;
    let f = settled(&app, &ann.access, &c, "b.txt").await;
    assert_eq!(f["state"], "failed", "{f}");
    assert!(f["error"].as_str().unwrap().contains("500"), "{f}");
    // Retried once the endpoint is back: it resumes and is ready.
    fake.fail_embeddings(0, 500);
    let id = f["id"].as_str().unwrap();
    let (status, _) = send(
        &app,
        Method::POST,
        &ann.access,
        &format!("/api/collections/{c}/files/{id}/retry"),
        None,
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(
        settled(&app, &ann.access, &c, "b.txt").await["state"],
        "ready"
    );
    assert!(search(&app, &ann.access, "alpha", 5).await.is_empty());

    let mine = collection(&app, &bob.access, "Bob").await;
    upload(
        &app,
        &bob.access,
        &mine,
        "c.txt",
        prose("gamma", 20).into_bytes(),
    )
    .await;
    let f = settled(&app, &bob.access, &mine, "c.txt").await;
    assert_eq!(
        (f["state"].as_str(), f["error_code"].as_str()),
        (Some("failed"), Some("budget_exhausted")),
        "{f}"
    );
    let t = app.budget_totals(bob.user_id).await;
    assert_eq!((t.spent, t.reserved), (0, 0));
}

#[tokio::test]
async fn a_new_version_replaces_the_old_at_once_and_nothing_half_indexed_is_found() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake).start_as(["ann"]).await;
    let c = collection(&app, &ann.access, "Docs").await;
    upload(
        &app,
        &ann.access,
        &c,
        "plan.txt",
        prose("alpha", 20).into_bytes(),
    )
    .await;
    settled(&app, &ann.access, &c, "plan.txt").await;
    // Each embeddings request (the new version's batches and each search's query) waits:
    // the new version takes several of them, so searches run while it is being built.
    fake.set_embedding_delay(Some(Duration::from_millis(500)));
    let (status, replaced) = upload(
        &app,
        &ann.access,
        &c,
        "plan.txt",
        prose("omega", 60).into_bytes(),
    )
    .await;
    assert_eq!(
        (status, replaced["state"].as_str()),
        (202, Some("queued")),
        "{replaced}"
    );
    let mut checked_in_progress = 0;
    loop {
        let alpha = search(&app, &ann.access, "alpha", 5).await;
        let omega = search(&app, &ann.access, "omega", 5).await;
        let after = file_state(&app, &ann.access, &c).await;
        if after == "ready" {
            break;
        }
        // Both searches ran before the new version went live: only the old is found.
        checked_in_progress += 1;
        assert!(
            !alpha.is_empty() && omega.is_empty(),
            "{after}: {alpha:?} {omega:?}"
        );
    }
    assert!(checked_in_progress > 0, "the new version went live at once");
    let alpha = search(&app, &ann.access, "alpha", 5).await;
    assert!(
        alpha.is_empty(),
        "the old version is still found: {alpha:?}"
    );
    let omega = search(&app, &ann.access, "omega", 5).await;
    assert!(!omega.is_empty(), "the new version is not found");
    let generations = strings(&app, "SELECT DISTINCT generation::text AS v FROM chunks").await;
    assert_eq!(generations, vec!["2".to_owned()]);
}

async fn file_state(app: &agentchat_tests::TestApp, token: &str, c: &str) -> String {
    let (_, got) = send(
        app,
        Method::GET,
        token,
        &format!("/api/collections/{c}"),
        None,
    )
    .await;
    got["files"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
