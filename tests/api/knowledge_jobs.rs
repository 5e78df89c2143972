//! Ingestion jobs under hostile files and busy members (issue 41): a file whose claims kept
//! dying is set aside instead of crash-looping the replicas; a mebibyte without a break is
//! chunked in linear time; a job past its time budget fails and frees its worker; workers
//! serve uploaders in turn; and a user's collection files are held to a storage quota.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::FakeUpstream;
use diesel::sql_types::{BigInt, Integer, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use crate::knowledge_support::{collection, on_fake, send, settled, strings, upload};

fn prose(topic: &str, sentences: usize) -> String {
    (0..sentences)
        .map(|i| format!("The {topic} rule number {i} says the {topic} matters on day {i}. "))
        .collect()
}

/// A document row as a claim by a process that then died leaves it: leased to a process
/// that is not in `server_processes`, `attempts` claims counted, still extracting.
async fn insert_dead_claim(
    app: &agentchat_tests::TestApp,
    collection: &str,
    user: Uuid,
    name: &str,
    attempts: i32,
) {
    let mut db = app.db().await;
    let text = prose("crash", 20);
    diesel::sql_query(
        "INSERT INTO documents (id, collection_id, name, source, uploaded_by, content, \
                                content_sha256, bytes, state, target_model, lease_owner, \
                                attempts) \
         VALUES (gen_random_uuid(), $1, $2, 'upload', $3, $4, 'x', $5, 'extracting', 'embed', \
                 gen_random_uuid(), $6)",
    )
    .bind::<SqlUuid, _>(Uuid::parse_str(collection).unwrap())
    .bind::<Text, _>(name)
    .bind::<SqlUuid, _>(user)
    .bind::<diesel::sql_types::Bytea, _>(text.as_bytes())
    .bind::<BigInt, _>(text.len() as i64)
    .bind::<Integer, _>(attempts)
    .execute(&mut db)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_file_whose_claims_kept_dying_is_set_aside_without_being_run() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| s.knowledge.max_attempts = 3)
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    // Three claims, each by a process that died on it: the next claim is past the limit.
    insert_dead_claim(&app, &c, ann.user_id, "bomb.txt", 3).await;
    let f = settled(&app, &ann.access, &c, "bomb.txt").await;
    assert_eq!(
        (f["state"].as_str(), f["error_code"].as_str()),
        (Some("failed"), Some("extraction_crashed")),
        "{f}"
    );
    assert!(
        f["error"].as_str().unwrap().contains("3 times"),
        "the reason says how often: {f}"
    );
    // Not run: nothing extracted, chunked or embedded.
    assert_eq!(fake.embedding_request_count(), 0);
    let left = strings(
        &app,
        "SELECT (count(*) FILTER (WHERE d.text IS NOT NULL))::TEXT || '/' || \
                (SELECT count(*) FROM chunks)::TEXT AS v FROM documents d",
    )
    .await;
    assert_eq!(left, ["0/0"]);

    // One dead claim short of the limit: taken over and finished as before.
    insert_dead_claim(&app, &c, ann.user_id, "resumed.txt", 2).await;
    let f = settled(&app, &ann.access, &c, "resumed.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
    // Retry gives the set-aside file its attempts back.
    let (status, r) = send(
        &app,
        Method::POST,
        &ann.access,
        &format!(
            "/api/collections/{c}/files/{}/retry",
            file_id(&app, &ann.access, &c, "bomb.txt").await
        ),
        None,
    )
    .await;
    assert_eq!(status, 202, "{r}");
    let f = settled(&app, &ann.access, &c, "bomb.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
}

async fn file_id(app: &agentchat_tests::TestApp, token: &str, c: &str, name: &str) -> String {
    let (_, col) = send(
        app,
        Method::GET,
        token,
        &format!("/api/collections/{c}"),
        None,
    )
    .await;
    col["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_mebibyte_without_a_break_is_indexed_in_bounded_time_with_exact_offsets() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| {
            s.knowledge.chunk_tokens = 300;
            s.knowledge.chunk_overlap_tokens = 40;
            s.knowledge.embed_batch = 512;
        })
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    let started = Instant::now();
    let (status, body) = upload(&app, &ann.access, &c, "run.txt", vec![b'x'; 1 << 20]).await;
    assert_eq!(status, 202, "{body}");
    // `settled` gives up after 60 s; before runs were cut, chunking alone took minutes.
    let f = settled(&app, &ann.access, &c, "run.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(f["chunks"].as_u64().unwrap() > 100, "{f}");
    // Every chunk is exactly the bytes its offsets name in the file's text.
    let wrong = strings(
        &app,
        "SELECT count(*)::TEXT AS v FROM chunks c JOIN documents d ON d.id = c.document_id \
          WHERE substring(d.text FROM c.byte_start + 1 FOR c.byte_end - c.byte_start) <> c.text",
    )
    .await;
    assert_eq!(wrong, ["0"]);
}

#[tokio::test]
async fn a_job_past_its_time_budget_fails_and_frees_its_worker() {
    let fake = FakeUpstream::start().await;
    fake.set_embedding_delay(Some(Duration::from_secs(3)));
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| {
            s.knowledge.workers = 1;
            s.knowledge.job_timeout_secs = 1;
        })
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    upload(
        &app,
        &ann.access,
        &c,
        "slow.txt",
        prose("slow", 20).into_bytes(),
    )
    .await;
    let f = settled(&app, &ann.access, &c, "slow.txt").await;
    assert_eq!(
        (f["state"].as_str(), f["error_code"].as_str()),
        (Some("failed"), Some("job_timeout")),
        "{f}"
    );
    assert!(f["error"].as_str().unwrap().contains("1 s"), "{f}");
    // The only worker is free again.
    fake.set_embedding_delay(None);
    upload(&app, &ann.access, &c, "next.txt", b"A short note.".to_vec()).await;
    let f = settled(&app, &ann.access, &c, "next.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
}

async fn state_of(app: &agentchat_tests::TestApp, token: &str, c: &str, name: &str) -> String {
    let (_, col) = send(
        app,
        Method::GET,
        token,
        &format!("/api/collections/{c}"),
        None,
    )
    .await;
    col["files"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == name))
        .map(|f| f["state"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn workers_serve_uploaders_in_turn() {
    let fake = FakeUpstream::start().await;
    fake.set_embedding_delay(Some(Duration::from_millis(250)));
    let (app, [ann, bob]) = on_fake(&fake)
        .settings(|s| s.knowledge.workers = 1)
        .start_as(["ann", "bob"])
        .await;
    let a = collection(&app, &ann.access, "Ann's").await;
    let b = collection(&app, &bob.access, "Bob's").await;
    // Two large files of Ann's (about ten batches each), then Bob's small one.
    for name in ["one.txt", "two.txt"] {
        let (status, _) = upload(&app, &ann.access, &a, name, prose(name, 60).into_bytes()).await;
        assert_eq!(status, 202);
    }
    let (status, _) = upload(&app, &bob.access, &b, "note.txt", vec![b'n'; 100]).await;
    assert_eq!(status, 202);
    let f = settled(&app, &bob.access, &b, "note.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
    // One global queue would have run both of Ann's first.
    let second = state_of(&app, &ann.access, &a, "two.txt").await;
    assert_ne!(second, "ready", "Bob's file waited behind both of Ann's");
    assert_eq!(
        settled(&app, &ann.access, &a, "two.txt").await["state"],
        "ready"
    );
}

fn code(body: &Value) -> Option<&str> {
    body["error"]["code"].as_str()
}

#[tokio::test]
async fn a_user_s_collection_files_are_held_to_a_storage_quota() {
    let fake = FakeUpstream::start().await;
    let (app, [ann, bob]) = on_fake(&fake)
        .settings(|s| s.knowledge.user_quota_bytes = 10_000)
        .start_as(["ann", "bob"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    let c2 = collection(&app, &ann.access, "More").await;
    let (status, body) = upload(&app, &ann.access, &c, "a.txt", vec![b'a'; 6000]).await;
    assert_eq!(status, 202, "{body}");
    // Counted over every collection of hers.
    let (status, body) = upload(&app, &ann.access, &c2, "b.txt", vec![b'b'; 5000]).await;
    assert_eq!(
        (status, code(&body)),
        (413, Some("knowledge_quota_exceeded")),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("6000") && message.contains("10000"),
        "{message}"
    );
    // A new version counts its size instead of the old one's.
    let (status, body) = upload(&app, &ann.access, &c, "a.txt", vec![b'c'; 9000]).await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = upload(&app, &ann.access, &c2, "b.txt", vec![b'b'; 1001]).await;
    assert_eq!(
        (status, code(&body)),
        (413, Some("knowledge_quota_exceeded")),
        "{body}"
    );
    let (status, body) = upload(&app, &ann.access, &c2, "b.txt", vec![b'b'; 1000]).await;
    assert_eq!(status, 202, "exactly the quota fits: {body}");
    // Adding from the workspace is held to it too.
    let r = app
        .client
        .put(app.url("/api/files/extra.txt"))
        .bearer_auth(&ann.access)
        .body(vec![b'w'; 10])
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let (status, body) = send(
        &app,
        Method::POST,
        &ann.access,
        &format!("/api/collections/{c}/files"),
        Some(serde_json::json!({"workspace_path": "extra.txt"})),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (413, Some("knowledge_quota_exceeded")),
        "{body}"
    );
    // Stored nothing, and the list says where she stands.
    let (_, list) = send(&app, Method::GET, &ann.access, "/api/collections", None).await;
    assert_eq!(list["storage"]["used_bytes"], 10_000, "{list}");
    assert_eq!(list["storage"]["limit_bytes"], 10_000, "{list}");
    // Another user's quota is their own.
    let (_, list) = send(&app, Method::GET, &bob.access, "/api/collections", None).await;
    assert_eq!(list["storage"]["used_bytes"], 0, "{list}");
    // Removing a file makes room.
    let id = file_id(&app, &ann.access, &c, "a.txt").await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &ann.access,
        &format!("/api/collections/{c}/files/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, body) = upload(&app, &ann.access, &c, "z.txt", vec![b'z'; 8000]).await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn adds_racing_for_the_last_of_a_quota_do_not_both_fit() {
    let fake = FakeUpstream::start().await;
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| {
            s.knowledge.user_quota_bytes = 10_000;
            s.security.max_concurrent_uploads_per_user = 16;
            s.security.max_concurrent_uploads = 16;
        })
        .start_as(["ann"])
        .await;
    let c = collection(&app, &ann.access, "Docs").await;
    let uploads = (0..6).map(|i| {
        let (app, token, c) = (&app, &ann.access, &c);
        async move {
            upload(app, token, c, &format!("f{i}.txt"), vec![b'q'; 4000])
                .await
                .0
        }
    });
    let statuses = futures_util::future::join_all(uploads).await;
    let ok = statuses.iter().filter(|s| **s == 202).count();
    assert_eq!(ok, 2, "{statuses:?}");
    let (_, list) = send(&app, Method::GET, &ann.access, "/api/collections", None).await;
    assert_eq!(list["storage"]["used_bytes"], 8000, "{list}");
}

/// Workers claiming at once take each waiting job exactly once. A claim that committed after
/// another's snapshot was taken again by it (its lock skips only rows locked at that
/// moment), so one process's two workers embedded a resumed file twice.
#[tokio::test]
async fn workers_claiming_at_once_take_each_job_once() {
    let fake = FakeUpstream::start().await;
    // No workers of its own: the claims below are the only ones.
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| s.knowledge.enabled = false)
        .start_as(["ann"])
        .await;
    let c = Uuid::new_v4();
    diesel::sql_query("INSERT INTO collections (id, owner_id, name) VALUES ($1, $2, 'Docs')")
        .bind::<SqlUuid, _>(c)
        .bind::<SqlUuid, _>(ann.user_id)
        .execute(&mut app.db().await)
        .await
        .unwrap();
    const JOBS: usize = 60;
    for i in 0..JOBS {
        insert_dead_claim(&app, &c.to_string(), ann.user_id, &format!("f{i}.txt"), 0).await;
    }
    let me = strings(&app, "SELECT id::TEXT AS v FROM server_processes LIMIT 1").await;
    let me = Uuid::parse_str(&me[0]).unwrap();
    let workers = (0..8).map(|_| {
        let url = app.database_url.clone();
        tokio::spawn(async move {
            use diesel_async::AsyncConnection;
            let mut conn = diesel_async::AsyncPgConnection::establish(&url)
                .await
                .unwrap();
            let mut taken = Vec::new();
            while let Some(job) = agentchat::knowledge::job_claim::claim(&mut conn, me)
                .await
                .unwrap()
            {
                taken.push(job.id);
            }
            taken
        })
    });
    let mut taken: Vec<Uuid> = Vec::new();
    for w in workers.collect::<Vec<_>>() {
        taken.extend(w.await.unwrap());
    }
    let claims = taken.len();
    taken.sort();
    taken.dedup();
    assert_eq!((claims, taken.len()), (JOBS, JOBS), "claims, distinct jobs");
    let attempts = strings(
        &app,
        "SELECT count(*)::TEXT AS v FROM documents WHERE attempts <> 1",
    )
    .await;
    assert_eq!(attempts, ["0"], "every job counted one claim");
}
