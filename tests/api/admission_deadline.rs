//! How long a queued turn start waits, and when it is refused. The starts that hold a
//! connection are held up on purpose: a test transaction locks `conversations` against
//! writes, so each start's claim blocks inside its transaction while later starts queue in
//! front of the pool. A queued start waits up to the turn deadline (not the pool's acquire
//! timeout, not a fixed minute) and then gets 503 `overloaded`; past the queue's depth a
//! start is refused at once; and `/readyz` does not wait behind any of them.

use std::time::{Duration, Instant};

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};

use crate::admission::{burst, conversations, Answer};

/// One connection per pool shard, a 250 ms acquire timeout and the given turn deadline.
fn app(fake: &FakeUpstream, queue: usize, turn_deadline: Duration) -> AppBuilder<'_> {
    TestApp::builder()
        .openai(fake)
        .model("fake-model")
        .settings(move |s| {
            s.llm.turn_timeout = turn_deadline;
            s.database.pool_size = 3;
            s.database.acquire_timeout = Duration::from_millis(250);
            s.database.turn_start_queue = queue;
        })
}

/// Holds a write lock on `conversations` for `hold`, then lets go: every turn start's claim
/// waits for it. Returns once the lock is taken.
async fn lock_conversations(app: &TestApp, hold: Duration) -> tokio::task::JoinHandle<()> {
    let mut conn = AsyncPgConnection::establish(&app.database_url)
        .await
        .unwrap();
    conn.batch_execute("BEGIN; LOCK TABLE conversations IN EXCLUSIVE MODE")
        .await
        .unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(hold).await;
        conn.batch_execute("COMMIT").await.unwrap();
    })
}

#[tokio::test]
async fn a_queued_start_waits_past_the_acquire_timeout_and_then_runs() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = app(&fake, 100, Duration::from_secs(30))
        .start_as(["patient"])
        .await;
    let convs = conversations(&app, &s.access, 12).await;
    let release = lock_conversations(&app, Duration::from_secs(2)).await;
    let answers = burst(&app, &s.access, &convs).await;
    release.await.unwrap();
    for a in &answers {
        assert_eq!(
            (a.status, a.code.as_deref()),
            (200, None),
            "every start is admitted"
        );
        assert!(a.done, "every turn ends with done");
    }
    let slowest = answers.iter().map(|a| a.after).max().unwrap();
    assert!(
        slowest >= Duration::from_millis(1900),
        "the starts waited for the lock ({slowest:?}), eight times the acquire timeout"
    );
}

#[tokio::test]
async fn a_queued_start_is_refused_when_the_turn_deadline_runs_out() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = app(&fake, 100, Duration::from_secs(2))
        .start_as(["deadline"])
        .await;
    let convs = conversations(&app, &s.access, 8).await;
    let release = lock_conversations(&app, Duration::from_secs(6)).await;
    let answers = burst(&app, &s.access, &convs).await;
    release.await.unwrap();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "the starts queued behind the blocked ones give up at the deadline"
    );
    for a in &refused {
        assert_eq!(a.code.as_deref(), Some("overloaded"));
        assert_eq!(a.retry_after.as_deref(), Some("2"));
        assert!(
            a.after >= Duration::from_millis(1900) && a.after < Duration::from_secs(5),
            "refused after the 2 s turn deadline, before the lock went: {:?}",
            a.after
        );
    }
    // The refused ones left nothing behind: their conversations take a message now.
    let refused_conv = answers
        .iter()
        .zip(&convs)
        .find(|(a, _)| a.status == 503)
        .map(|(_, c)| c.clone())
        .unwrap();
    let again = app.chat(&s.access, &refused_conv, "again").await;
    assert!(again.iter().any(|e| e.event == "done"));
}

#[tokio::test]
async fn past_the_queue_depth_a_start_is_refused_at_once() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = app(&fake, 3, Duration::from_secs(30))
        .start_as(["full"])
        .await;
    let convs = conversations(&app, &s.access, 10).await;
    let release = lock_conversations(&app, Duration::from_secs(3)).await;
    let answers = burst(&app, &s.access, &convs).await;
    release.await.unwrap();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    // One start per pool shard holds a connection, three wait; the rest are refused,
    // without waiting for the lock.
    assert!(!refused.is_empty(), "a queue of depth 3 refuses some of 10");
    for a in &refused {
        assert_eq!(a.code.as_deref(), Some("overloaded"));
        assert_eq!(a.retry_after.as_deref(), Some("2"));
        assert!(
            a.after < Duration::from_secs(2),
            "refused at once, not after waiting: {:?}",
            a.after
        );
    }
    assert!(
        answers
            .iter()
            .all(|a| a.status == 503 || (a.status == 200 && a.done)),
        "the admitted ones run to the end"
    );
}

#[tokio::test]
async fn readyz_answers_at_once_while_starts_hold_and_queue_for_every_connection() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = app(&fake, 100, Duration::from_secs(30))
        .start_as(["ready"])
        .await;
    let convs = conversations(&app, &s.access, 8).await;
    let release = lock_conversations(&app, Duration::from_secs(3)).await;
    let probes = async {
        // The starts have taken every worker's connection and the rest queue behind them.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut answers = Vec::new();
        for _ in 0..4 {
            let t0 = Instant::now();
            let r = app.client.get(app.url("/readyz")).send().await.unwrap();
            answers.push((r.status().as_u16(), t0.elapsed()));
        }
        answers
    };
    let (answers, probes) = tokio::join!(burst(&app, &s.access, &convs), probes);
    release.await.unwrap();
    for (status, took) in probes {
        assert_eq!(
            status, 200,
            "the database is reachable; the pool is only busy"
        );
        assert!(
            took < Duration::from_secs(1),
            "readyz did not wait behind the starts: {took:?}"
        );
    }
    assert!(answers.iter().all(|a| a.status == 200 && a.done));
}

/// Creating a conversation (a chat's first request) queues for a connection like a turn
/// start: while starts hold every connection, a creation waits past the pool's acquire
/// timeout and is answered 201 once they are done, not 503 after that timeout.
#[tokio::test]
async fn creating_a_conversation_queues_like_a_turn_start() {
    let fake = FakeUpstream::start().await;
    fake.set_default(Some(Reply::text("fine").scripted()));
    let (app, [s]) = app(&fake, 100, Duration::from_secs(30))
        .start_as(["creator"])
        .await;
    let convs = conversations(&app, &s.access, 6).await;
    let release = lock_conversations(&app, Duration::from_secs(2)).await;
    let creations = async {
        // The starts take the connections first; the creations then wait behind them.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t0 = Instant::now();
        let answers = futures_util::future::join_all((0..4).map(|_| {
            app.post_as(&s.access, "/api/conversations")
                .json(&serde_json::json!({}))
                .send()
        }))
        .await;
        (answers, t0.elapsed())
    };
    let (starts, (created, waited)) = tokio::join!(burst(&app, &s.access, &convs), creations);
    release.await.unwrap();
    for r in created {
        let r = r.unwrap();
        let status = r.status().as_u16();
        assert_eq!(status, 201, "{}", r.text().await.unwrap());
    }
    assert!(
        waited >= Duration::from_millis(1000),
        "the creations waited for the starts ({waited:?}), past the 250 ms acquire timeout"
    );
    assert!(starts.iter().all(|a| a.status == 200 && a.done));
}
