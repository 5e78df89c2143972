//! Lock order and transaction conflicts (issue 43 item 5): concurrent turns, titles and budget
//! holds of the same users in the same conversations deadlock nothing and answer no 5xx; the
//! conflict retry, on a real deadlock and a real serialization failure, retries then succeeds,
//! and gives up with the 503 `busy` kind.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::ResponseError;
use agentchat::db::conflict::{self, Transaction};
use agentchat::db::DbError;
use agentchat::llm::Usage;
use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use agentchat_tests::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(db: &mut AsyncPgConnection, query: &str) -> i64 {
    diesel::sql_query(query)
        .get_result::<Count>(db)
        .await
        .unwrap()
        .n
}

/// Deadlocks Postgres has detected in this connection's database.
async fn deadlocks(db: &mut AsyncPgConnection) -> i64 {
    count(
        db,
        "SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()",
    )
    .await
}

fn database_name(url: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .path()
        .trim_start_matches('/')
        .to_owned()
}

/// Users, each with a budget and several conversations, chatting in all of them at once:
/// every conversation's first answer starts its title while the next turns start and end in
/// the same conversation and the user's other ones, all settling the same budget row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn turns_titles_and_budget_holds_together_deadlock_nothing_and_answer_no_5xx() {
    const USERS: usize = 4;
    const CONVERSATIONS: usize = 10;
    const TURNS: usize = 4;
    let db = fresh_database_guard().await;
    {
        // Deadlocks are found after `deadlock_timeout` (1 s by default): shortened so that a
        // run that does deadlock shows it quickly.
        let mut admin = AsyncPgConnection::establish(db.url()).await.unwrap();
        admin
            .batch_execute(&format!(
                "ALTER DATABASE {} SET deadlock_timeout = '100ms'",
                database_name(db.url())
            ))
            .await
            .unwrap();
    }
    let fake = FakeUpstream::start().await;
    // Every answer (turns and titles alike) streams for a while, so titles overlap turns.
    fake.set_default(Some(
        Reply::Text {
            text: "Lisbon in May is lovely and mild".into(),
            usage: Some(Usage::new(120, 12)),
        }
        .chunk_delay(Duration::from_millis(3)),
    ));
    let names: Vec<String> = (0..USERS).map(|i| format!("user{i}")).collect();
    let mut builder = TestApp::builder()
        .database(db.url())
        .openai(&fake)
        .model("fake")
        .settings(|s| {
            s.llm.auto_titles = true;
            // Room for every client's transaction at once: the locks, not the pool, decide.
            s.database.pool_size = 24;
        });
    for name in &names {
        builder = builder.budget(name, Some(50_000_000));
    }
    let (app, sessions) = builder
        .start_as(["boss", "user0", "user1", "user2", "user3"])
        .await;
    let app = Arc::new(app);
    let mut watch = app.db().await;
    let before = deadlocks(&mut watch).await;

    let server_errors = Arc::new(AtomicU32::new(0));
    let unfinished = Arc::new(AtomicU32::new(0));
    let mut clients = Vec::new();
    for session in sessions.iter().skip(1) {
        for c in 0..CONVERSATIONS {
            let (app, token) = (app.clone(), session.access.clone());
            let (server_errors, unfinished) = (server_errors.clone(), unfinished.clone());
            clients.push(tokio::spawn(async move {
                let created = app
                    .post_as(&token, "/api/conversations")
                    .json(&serde_json::json!({}))
                    .send()
                    .await
                    .unwrap();
                if created.status().is_server_error() {
                    server_errors.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                assert_eq!(created.status(), 201);
                let id = created.json::<serde_json::Value>().await.unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                for t in 0..TURNS {
                    let r = app
                        .send_message(&token, &id, &format!("trip {c} question {t}"))
                        .await;
                    if r.status().is_server_error() {
                        server_errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
                    let events = parse_sse(&r.text().await.unwrap());
                    if events.last().map(|e| e.event.as_str()) != Some("done") {
                        eprintln!("a turn did not end with done: {:?}", events.last());
                        unfinished.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    for c in clients {
        tokio::time::timeout(Duration::from_secs(300), c)
            .await
            .expect("the clients finish")
            .unwrap();
    }
    // Titles still running finish their store; then the backends report their statistics
    // (at most once a second, when idle).
    let until = Instant::now() + Duration::from_secs(30);
    while count(&mut watch, "SELECT count(*) AS n FROM budget_holds").await > 0
        && Instant::now() < until
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = deadlocks(&mut watch).await;
    let titled = count(
        &mut watch,
        "SELECT count(*) AS n FROM conversations WHERE NOT title_auto",
    )
    .await;
    eprintln!(
        "deadlocks {before} -> {after}; titled {titled} of {}; 5xx {}; unfinished {}",
        USERS * CONVERSATIONS,
        AtomicU32::load(&server_errors, Ordering::Relaxed),
        AtomicU32::load(&unfinished, Ordering::Relaxed)
    );
    assert_eq!(
        AtomicU32::load(&server_errors, Ordering::Relaxed),
        0,
        "5xx answers"
    );
    assert_eq!(
        AtomicU32::load(&unfinished, Ordering::Relaxed),
        0,
        "turns ended in an error"
    );
    assert_eq!(after - before, 0, "Postgres detected deadlocks");
    assert!(titled > 0, "no title was made: the test raced nothing");
}

/// A scratch table with rows 1 and 2 in a fresh database; its URL.
async fn scratch(db: &DatabaseGuard) -> AsyncPgConnection {
    let mut c = AsyncPgConnection::establish(db.url()).await.unwrap();
    c.batch_execute(
        "CREATE TABLE scratch (id INT PRIMARY KEY, v INT NOT NULL); \
         INSERT INTO scratch VALUES (1, 0), (2, 0)",
    )
    .await
    .unwrap();
    c
}

/// Waits until a backend of this database waits for a lock.
async fn until_lock_wait(watch: &mut AsyncPgConnection) {
    let until = Instant::now() + Duration::from_secs(30);
    while count(
        watch,
        "SELECT count(*) AS n FROM pg_stat_activity \
          WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .await
        == 0
    {
        assert!(Instant::now() < until, "nobody waited for a lock");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_retried_and_the_retry_succeeds() {
    let db = fresh_database_guard().await;
    let mut watch = scratch(&db).await;
    // The other side of the deadlock: holds row 2, and will want row 1.
    let mut other = AsyncPgConnection::establish(db.url()).await.unwrap();
    other
        .batch_execute(
            "SET deadlock_timeout = '60s'; BEGIN; UPDATE scratch SET v = v + 10 WHERE id = 2",
        )
        .await
        .unwrap();
    let other = Arc::new(tokio::sync::Mutex::new(Some(other)));
    let metrics = agentchat::metrics::Metrics::new().unwrap();
    let attempts = AtomicU32::new(0);
    let url = db.url().to_owned();
    let result = conflict::retry(Transaction::Title, &metrics.db_conflicts, || {
        let (url, other) = (url.clone(), other.clone());
        let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let mut mine = AsyncPgConnection::establish(&url).await.unwrap();
            let mut watch = AsyncPgConnection::establish(&url).await.unwrap();
            // This side finds the deadlock first, so it is the one Postgres gives up.
            mine.batch_execute(
                "SET deadlock_timeout = '100ms'; BEGIN; UPDATE scratch SET v = v + 1 WHERE id = 1",
            )
            .await?;
            let other_side = if n == 1 {
                let other = other.clone();
                let side = tokio::spawn(async move {
                    let mut guard = other.lock().await;
                    let c = guard.as_mut().unwrap();
                    c.batch_execute("UPDATE scratch SET v = v + 10 WHERE id = 1; COMMIT")
                        .await
                        .unwrap();
                });
                until_lock_wait(&mut watch).await;
                Some(side)
            } else {
                None
            };
            let second = mine
                .batch_execute("UPDATE scratch SET v = v + 1 WHERE id = 2; COMMIT")
                .await;
            if second.is_err() {
                let _ = mine.batch_execute("ROLLBACK").await;
            }
            if let Some(side) = other_side {
                side.await.unwrap();
            }
            second.map_err(DbError::from)
        }
    })
    .await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        AtomicU32::load(&attempts, Ordering::SeqCst),
        2,
        "one deadlock, one retry"
    );
    assert_eq!(
        metrics.db_conflicts.with_label_values(&["title"]).get(),
        1,
        "the lost attempt is counted"
    );
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        v: String,
    }
    let rows: Vec<Row> = diesel::sql_query("SELECT v::text AS v FROM scratch ORDER BY id")
        .load(&mut watch)
        .await
        .unwrap();
    let values: Vec<&str> = rows.iter().map(|r| r.v.as_str()).collect();
    assert_eq!(values, ["11", "11"], "both transactions committed once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialization_failures_that_never_stop_end_as_503_busy() {
    let db = fresh_database_guard().await;
    let _setup = scratch(&db).await;
    let metrics = agentchat::metrics::Metrics::new().unwrap();
    let attempts = AtomicU32::new(0);
    let url = db.url().to_owned();
    let result = conflict::retry(Transaction::TurnStep, &metrics.db_conflicts, || {
        let url = url.clone();
        attempts.fetch_add(1, Ordering::SeqCst);
        async move {
            let mut mine = AsyncPgConnection::establish(&url).await.unwrap();
            let mut other = AsyncPgConnection::establish(&url).await.unwrap();
            // A repeatable-read snapshot, then a concurrent update of the row it then updates.
            mine.batch_execute(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT v FROM scratch WHERE id = 1",
            )
            .await?;
            other
                .batch_execute("UPDATE scratch SET v = v + 1 WHERE id = 1")
                .await
                .unwrap();
            let lost = mine
                .batch_execute("UPDATE scratch SET v = v + 100 WHERE id = 1; COMMIT")
                .await;
            let _ = mine.batch_execute("ROLLBACK").await;
            lost.map_err(DbError::from)
        }
    })
    .await;
    let Err(e) = result else {
        panic!("a serialization failure every time cannot succeed")
    };
    assert!(matches!(e, DbError::Conflict(_)), "{e:?}");
    assert_eq!(
        AtomicU32::load(&attempts, Ordering::SeqCst),
        conflict::ATTEMPTS
    );
    assert_eq!(
        metrics.db_conflicts.with_label_values(&["turn_step"]).get(),
        u64::from(conflict::ATTEMPTS)
    );
    let answer = agentchat::error::ApiError::from(e).error_response();
    assert_eq!(answer.status(), 503);
    assert!(
        answer.headers().contains_key("retry-after"),
        "{:?}",
        answer.headers()
    );
}
