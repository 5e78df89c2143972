//! A turn's row inserts (messages, usage, audit) have two texts for the same binds
//! (`agentchat::db::rows_insert`): one row takes each array's first element, more go through
//! `unnest` in order. Both must store a row identically, every column included.

use agentchat::db::models::audit::{self, ApprovalAudit, NewAudit};
use agentchat::db::models::message::{self, NewMessage};
use agentchat::db::models::usage::{self, NewUsage};
use agentchat_tests::*;
use diesel::sql_types::{Jsonb, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use uuid::Uuid;

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Jsonb)]
    row: Value,
}

/// The rows of `table` in `conversation`, in `order`, as JSON without the columns that
/// differ for every row (ids, times, and the usage's message id).
async fn stored(
    db: &mut AsyncPgConnection,
    table: &str,
    conversation: Uuid,
    order: &str,
) -> Vec<Value> {
    diesel::sql_query(format!(
        "SELECT to_jsonb(t) - 'id' - 'seq' - 'created_at' - 'message_id' AS row \
           FROM {table} t WHERE conversation_id = $1 ORDER BY {order}"
    ))
    .bind::<SqlUuid, _>(conversation)
    .load::<Stored>(db)
    .await
    .unwrap()
    .into_iter()
    .map(|s| s.row)
    .collect()
}

fn full_message(conversation: Uuid, content: &str) -> NewMessage {
    let mut m = NewMessage::answer(conversation, content.into(), "demo".into(), 1234);
    m.tool_calls = Some(json!([{"id": "c1", "name": "calculator", "arguments": {"x": "6*7"}}]));
    m.attachments = Some(json!([{"path": "report.csv", "bytes": 10}]));
    m.citations = Some(json!([{"n": 1, "document": "d"}]));
    m.status_reason = Some("because".into());
    m.input_tokens = Some(11);
    m.output_tokens = Some(22);
    m
}

#[tokio::test]
async fn one_message_is_stored_as_a_batch_stores_it() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("onerow").await;
    let alone: Uuid = app.new_conversation(&s.access).await.parse().unwrap();
    let batch: Uuid = app.new_conversation(&s.access).await.parse().unwrap();
    let mut db = app.db().await;
    let text = "read /var/log/app.log, then 六七 🦀";

    message::insert_many(&mut db, &[full_message(alone, text)])
        .await
        .unwrap();
    let rows = [
        NewMessage::complete(batch, "user".parse().unwrap(), "first"),
        full_message(batch, text),
        NewMessage::complete(batch, "assistant".parse().unwrap(), "last"),
    ];
    message::insert_many(&mut db, &rows).await.unwrap();

    let one = stored(&mut db, "messages", alone, "seq").await;
    let many = stored(&mut db, "messages", batch, "seq").await;
    assert_eq!(one.len(), 1);
    let contents: Vec<&str> = many
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        ["first", text, "last"],
        "stored in the given order"
    );
    let mut as_alone = many[1].clone();
    as_alone["conversation_id"] = json!(alone);
    assert_eq!(one[0], as_alone);
    // The search vector is the table's own, whichever text stored the row.
    assert!(one[0]["search_vector"]
        .as_str()
        .is_some_and(|v| v.contains("'app'")));
}

fn full_usage(user: Uuid, conversation: Uuid) -> NewUsage {
    NewUsage {
        user_id: user,
        conversation_id: Some(conversation),
        message_id: Some(Uuid::new_v4()),
        model: "demo".into(),
        fallback_from: Some("big".into()),
        fallback_reason: Some("overloaded".into()),
        input_tokens: 100,
        output_tokens: 32,
        cache_read_tokens: 7,
        cache_write_tokens: 3,
        charged: 132,
        cost: Some((Decimal::new(12345, 6), "USD".into())),
    }
}

#[tokio::test]
async fn one_usage_and_audit_row_are_stored_as_a_batch_stores_them() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("oneusage").await;
    let alone: Uuid = app.new_conversation(&s.access).await.parse().unwrap();
    let batch: Uuid = app.new_conversation(&s.access).await.parse().unwrap();
    let mut db = app.db().await;

    usage::insert_many(&mut db, &[full_usage(s.user_id, alone)])
        .await
        .unwrap();
    let mut cheap = full_usage(s.user_id, batch);
    cheap.cost = None;
    usage::insert_many(&mut db, &[full_usage(s.user_id, batch), cheap])
        .await
        .unwrap();
    let one = stored(&mut db, "usage_records", alone, "id").await;
    let many = stored(&mut db, "usage_records", batch, "id").await;
    assert_eq!((one.len(), many.len()), (1, 2));
    assert!(many[1]["cost"].is_null(), "stored in the given order");
    let mut as_alone = many[0].clone();
    as_alone["conversation_id"] = json!(alone);
    assert_eq!(one[0], as_alone);

    let audit_row = |conversation: Uuid, outcome: &str| NewAudit {
        user_id: Some(s.user_id),
        username: "oneusage".into(),
        conversation_id: Some(conversation),
        tool: "calculator".into(),
        tool_call_id: "c1".into(),
        arguments: json!({"expression": "6*7"}),
        arguments_truncated: true,
        outcome: outcome.into(),
        error: Some("no".into()),
        duration_ms: 5,
        result_bytes: 2,
        trace_id: Some("t".into()),
        span_id: Some("s".into()),
        approval: Some(ApprovalAudit {
            policy: "user".parse().unwrap(),
            decision: "approved".parse().unwrap(),
            decided_by: Some("oneusage".into()),
            note: Some("fine".into()),
            decided_at: Some(chrono::Utc::now()),
        }),
    };
    audit::insert_many(&mut db, &[audit_row(alone, "ok")])
        .await
        .unwrap();
    audit::insert_many(
        &mut db,
        &[audit_row(batch, "ok"), audit_row(batch, "error")],
    )
    .await
    .unwrap();
    let one = stored(&mut db, "audit_log", alone, "id").await;
    let many = stored(&mut db, "audit_log", batch, "id").await;
    assert_eq!((one.len(), many.len()), (1, 2));
    assert_eq!(many[1]["outcome"], "error", "stored in the given order");
    let (mut one, mut as_alone) = (one[0].clone(), many[0].clone());
    as_alone["conversation_id"] = json!(alone);
    // Each row was decided at its own instant.
    for row in [&mut one, &mut as_alone] {
        assert!(row["approval_decided_at"].is_string());
        row["approval_decided_at"] = Value::Null;
    }
    assert_eq!(one, as_alone);
}
