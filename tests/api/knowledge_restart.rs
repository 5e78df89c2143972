//! An ingestion job survives its process (issue 31): the server embedding a file is killed
//! mid-way; another one takes the job over once the dead process is reaped, and finishes
//! it from the batches already stored, embedding nothing twice but the batch in flight.

use std::time::Duration;

use agentchat_tests::fake_upstream::FakeUpstream;
use serde_json::{json, Value};

use crate::budget::start_child_with;
use crate::knowledge_support::{on_fake, settled};

#[tokio::test]
async fn a_killed_process_s_job_is_resumed_by_another_from_where_it_stopped() {
    let fake = FakeUpstream::start().await;
    fake.set_embedding_delay(Some(Duration::from_millis(200)));
    // This process only holds the database: its collections are off, so it runs no jobs.
    let (app, [ann]) = on_fake(&fake)
        .settings(|s| s.knowledge.enabled = false)
        .start_as(["ann"])
        .await;
    let models = json!([{"name": "embed", "provider": "default", "dimensions": 256}]).to_string();
    let mut child = start_child_with(
        &app.database_url,
        &fake.base_url_openai(),
        &[
            ("AGENTCHAT_REPLICA_TIMEOUT_SECS", "2"),
            ("AGENTCHAT_EMBEDDING_MODELS", &models),
            ("AGENTCHAT_KNOWLEDGE_EMBEDDING_MODEL", "embed"),
            ("AGENTCHAT_KNOWLEDGE_CHUNK_TOKENS", "60"),
            ("AGENTCHAT_KNOWLEDGE_CHUNK_OVERLAP_TOKENS", "10"),
            ("AGENTCHAT_KNOWLEDGE_EMBED_BATCH", "4"),
        ],
    );
    let created: Value = app
        .client
        .post(format!("{}/api/collections", child.address))
        .bearer_auth(&ann.access)
        .json(&json!({"name": "Docs"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let c = created["id"].as_str().expect("a collection").to_owned();
    let text: String = (0..80)
        .map(|i| format!("Clause {i}: the supplier delivers batch {i} within {i} days. "))
        .collect();
    let r = app
        .client
        .put(format!(
            "{}/api/collections/{c}/files/contract.txt",
            child.address
        ))
        .bearer_auth(&ann.access)
        .body(text)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    for _ in 0..300 {
        if fake.embedded_input_count() >= 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fake.embedded_input_count() >= 8);
    child.child.kill().unwrap();
    let _ = child.child.wait();
    let before = fake.embedded_input_count();

    let second = on_fake(&fake)
        .database(&app.database_url)
        .settings(|s| s.durable.replica_timeout = Duration::from_secs(2))
        .start()
        .await;
    let f = settled(&second, &ann.access, &c, "contract.txt").await;
    assert_eq!(f["state"], "ready", "{f}");
    let chunks = f["chunks"].as_u64().unwrap() as usize;
    let total = fake.embedded_input_count();
    assert!(
        before < chunks,
        "the first process finished before it was killed"
    );
    // Resumed: at most the batch in flight when it died is embedded again.
    assert!(
        total <= chunks + 4,
        "{total} inputs embedded for {chunks} chunks"
    );
}
