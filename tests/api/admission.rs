//! Turn starts in a burst: a burst larger than the database pool waits its turn instead of
//! failing when the pool's usual acquire timeout runs out, and only a start past the
//! configured queue depth is refused, at once, with 503 `overloaded` and `Retry-After`.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use serde_json::json;

/// One connection per pool shard and a short acquire timeout: a start that waited only as
/// long as other requests do would fail long before a burst of a hundred is through.
fn small_pool_app(fake: &FakeUpstream, queue: usize) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .model("fake-model")
        .settings(move |s| {
            s.database.pool_size = 3;
            s.database.acquire_timeout = Duration::from_millis(250);
            s.database.turn_start_queue = queue;
        })
}

/// What one start was answered: status, `Retry-After`, error code, whether the turn ended
/// with `done`, and how long the whole answer took.
pub(crate) struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub code: Option<String>,
    pub done: bool,
    pub after: Duration,
}

/// Fires one turn start per conversation at once and reads every answer to its end.
pub(crate) async fn burst(app: &TestApp, token: &str, conversations: &[String]) -> Vec<Answer> {
    let starts = conversations.iter().map(|c| async move {
        let t0 = Instant::now();
        let r = app
            .post_as(token, &format!("/api/conversations/{c}/messages"))
            .json(&json!({"content": "hello"}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let retry_after = r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = r.text().await.unwrap();
        let code = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
        let done = parse_sse(&body).iter().any(|e| e.event == "done");
        Answer {
            status,
            retry_after,
            code,
            done,
            after: t0.elapsed(),
        }
    });
    futures_util::future::join_all(starts).await
}

pub(crate) async fn conversations(app: &TestApp, token: &str, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(app.new_conversation(token).await);
    }
    out
}

#[tokio::test]
async fn a_burst_of_starts_larger_than_the_pool_queues_instead_of_failing() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = small_pool_app(&fake, 10_000).start_as(["burst"]).await;
    let convs = conversations(&app, &s.access, 150).await;
    let answers = burst(&app, &s.access, &convs).await;
    let refused: Vec<_> = answers
        .iter()
        .filter(|a| a.status != 200)
        .map(|a| (a.status, a.code.clone()))
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {} starts refused: {:?}",
        refused.len(),
        answers.len(),
        &refused[..refused.len().min(5)]
    );
    assert!(answers.iter().all(|a| a.done), "every turn ends with done");
}

#[tokio::test]
async fn past_the_queue_depth_a_start_is_refused_at_once_with_retry_after() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = small_pool_app(&fake, 1).start_as(["flood"]).await;
    let convs = conversations(&app, &s.access, 60).await;
    let answers = burst(&app, &s.access, &convs).await;
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "a queue of depth 1 refuses some of 60 simultaneous starts"
    );
    for a in &refused {
        assert_eq!(a.code.as_deref(), Some("overloaded"));
        assert_eq!(a.retry_after.as_deref(), Some("2"));
    }
    assert!(
        answers
            .iter()
            .all(|a| a.status == 503 || (a.status == 200 && a.done)),
        "nothing else fails"
    );
    // The refused ones left nothing behind: their conversations take a message now.
    let again = app.chat(&s.access, &convs[0], "again").await;
    assert!(again.iter().any(|e| e.event == "done"));
}
