use std::time::Duration;

use agentchat::db::models::budget::{HoldTurn, Spend};
use agentchat::domain::MessageRole;
use agentchat_tests::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

fn db_name(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

async fn admin_conn() -> AsyncPgConnection {
    let mut u = url::Url::parse(&base_url()).unwrap();
    u.set_path("/postgres");
    AsyncPgConnection::establish(u.as_str()).await.unwrap()
}

#[tokio::test]
async fn database_outage_answers_503_and_recovers() {
    let app = TestApp::builder().start().await;
    let s = app.signed_up("xena").await;
    let name = db_name(&app.database_url);
    let mut admin = admin_conn().await;
    diesel::sql_query(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        .execute(&mut admin)
        .await
        .unwrap();
    diesel::sql_query(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ))
    .execute(&mut admin)
    .await
    .unwrap();

    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let r = app
        .get_as(&s.access, "/api/conversations")
        .send()
        .await
        .unwrap();
    let body = expect_error(r, 503, "unavailable").await;
    let text = body.to_string();
    assert!(
        !text.contains("postgres") && !text.contains("connection"),
        "leaks internals: {text}"
    );
    assert_eq!(
        app.client
            .get(app.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    diesel::sql_query(format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .execute(&mut admin)
        .await
        .unwrap();
    let mut recovered = false;
    for _ in 0..20 {
        let r = app
            .get_as(&s.access, "/api/conversations")
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        recovered,
        "the server did not recover after the database came back"
    );
    assert_eq!(
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn replicas_starting_together_create_and_migrate_a_missing_database_once() {
    let mut u = url::Url::parse(&base_url()).unwrap();
    let name = format!(
        "agentchat_t_{}_{}",
        chrono::Utc::now().timestamp(),
        uuid::Uuid::new_v4().simple()
    );
    u.set_path(&format!("/{name}"));
    let url = u.to_string();
    let starts = (0..3).map(|_| {
        let mut s = test_settings(&url);
        s.database.create_if_missing = true;
        agentchat::startup::Application::build(s)
    });
    let apps = futures_util::future::join_all(starts).await;
    for a in &apps {
        assert!(a.is_ok(), "{:?}", a.as_ref().err());
    }
    drop(apps);
    // Migrations are recorded exactly once each.
    let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let n = diesel::sql_query("SELECT count(*) AS n FROM __diesel_schema_migrations")
        .get_result::<N>(&mut conn)
        .await
        .unwrap()
        .n;
    assert_eq!(
        n,
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations"))
            .unwrap()
            .count() as i64
    );
}

/// The audit row of one successful calculator call.
fn calculator_audit(
    user: uuid::Uuid,
    username: &str,
    conversation: uuid::Uuid,
) -> agentchat::db::models::audit::NewAudit {
    agentchat::db::models::audit::NewAudit {
        user_id: Some(user),
        username: username.into(),
        conversation_id: Some(conversation),
        tool: "calculator".into(),
        tool_call_id: "call_1".into(),
        arguments: serde_json::json!({"expression": "1+1"}),
        arguments_truncated: false,
        outcome: "ok".into(),
        error: None,
        duration_ms: 1,
        result_bytes: 1,
        trace_id: None,
        span_id: None,
        approval: None,
    }
}

/// One agent turn through the storage layer with a tool call in the middle: begin, the
/// between-calls commit, finish.
async fn storage_turn(db: &mut AsyncPgConnection, user: uuid::Uuid, conversation: uuid::Uuid) {
    use agentchat::db::models::budget::Reserve;
    use agentchat::db::models::message::NewMessage;
    use agentchat::db::models::usage::NewUsage;
    use agentchat::turn::sql as turn;

    let message = |role: &str, content: &str| {
        NewMessage::complete(conversation, role.parse().unwrap(), content)
    };
    let now = chrono::Utc::now();
    let hold_ttl = Duration::from_secs(600);
    let claim = new_claim(user);
    let turn::Started {
        hold, committing, ..
    } = started(start_turn(db, &claim, conversation, "hi").await);
    committing.wait(db).await.unwrap();
    let audit = calculator_audit(user, "storage", conversation);
    let step = turn::Step {
        settle: Some((hold, Spend::tokens(60))),
        messages: Vec::new(),
        usage: Vec::new(),
        audit: vec![audit],
        input: 0,
        price: None,
        want: 150,
        need: 60,
        now,
        hold_ttl,
        process_id: uuid::Uuid::nil(),
        turn: HoldTurn {
            turn_id: claim.turn_id,
            conversation_id: conversation,
        },
    };
    let reserve = turn::next_call(db, user, &step)
        .await
        .unwrap()
        .reserve
        .unwrap();
    let Reserve::Granted(second) = reserve else {
        panic!("second call refused: {reserve:?}");
    };
    let usage = |input| NewUsage {
        user_id: user,
        conversation_id: Some(conversation),
        message_id: None,
        model: "m".into(),
        fallback_from: None,
        fallback_reason: None,
        input_tokens: input,
        output_tokens: 10,
        charged: input + 10,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost: None,
    };
    let rows = vec![
        message("assistant", "calling"),
        message("tool", "2"),
        message("assistant", "it is 2"),
    ];
    turn::finish(
        db,
        turn::Finish {
            conversation_id: conversation,
            turn_id: claim.turn_id,
            rows,
            usage_rows: vec![usage(50), usage(60)],
            audit_rows: Vec::new(),
            settle: Some((second, Spend::tokens(70))),
            end: serde_json::Value::Null,
        },
    )
    .await
    .unwrap();
}

#[derive(diesel::QueryableByName, Debug)]
struct Prepared {
    #[diesel(sql_type = diesel::sql_types::Text)]
    statement: String,
}

async fn prepared_statements(db: &mut AsyncPgConnection) -> Vec<String> {
    diesel::sql_query("SELECT statement FROM pg_prepared_statements ORDER BY statement")
        .load::<Prepared>(db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.statement)
        .collect()
}

/// The statements of an agent turn have fixed text, so a connection prepares each of them
/// once: diesel would prepare raw SQL, UPDATEs and multi-row INSERTs again on every call,
/// costing a round trip each and a fresh parse and plan in Postgres. The rows land in order
/// and the budget adds up.
#[tokio::test]
async fn a_turn_prepares_its_statements_once_per_connection() {
    let (app, s, conversation) = budgeted_conversation("storage").await;
    let mut db = app.db().await;

    // The first turn of a period reserves exactly (its budget row is created); later ones
    // lock the period row first and write the fitted hold with the user message.
    storage_turn(&mut db, s.user_id, conversation).await;
    storage_turn(&mut db, s.user_id, conversation).await;
    let after_first = prepared_statements(&mut db).await;
    for wanted in [
        "UPDATE conversations",
        "INSERT INTO messages",
        "INSERT INTO usage_records",
        "INSERT INTO audit_log",
        "INSERT INTO budget_holds",
        "FOR NO KEY UPDATE OF b",
        "DELETE FROM budget_holds",
    ] {
        assert!(
            after_first.iter().any(|s| s.contains(wanted)),
            "no cached statement with {wanted:?} in {after_first:#?}"
        );
    }
    // A hold is written once: never reserved large and cut afterwards.
    assert!(
        !after_first
            .iter()
            .any(|s| s.contains("UPDATE budget_holds")),
        "{after_first:#?}"
    );
    storage_turn(&mut db, s.user_id, conversation).await;
    assert_eq!(prepared_statements(&mut db).await, after_first);

    let contents = stored_contents(&app, &s.access, conversation).await;
    let one_turn = ["hi", "calling", "2", "it is 2"];
    assert_eq!(contents, one_turn.repeat(3));
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!((totals.spent, totals.reserved, totals.holds), (390, 0, 0));
    assert_eq!(totals.ledger, 3 * (60 + 70));
}

/// A turn's transactions send BEGIN and COMMIT along with their statements. When one statement
/// fails, Postgres rolls all of them back, the caller gets the error, and the connection is
/// healthy again; a retry then stores everything once.
#[tokio::test]
async fn a_failed_finish_keeps_nothing_and_can_be_retried() {
    use agentchat::db::models::message::NewMessage;
    use agentchat::db::models::usage::NewUsage;
    use agentchat::turn::sql as turn;
    use diesel_async::pooled_connection::PoolableConnection;

    let (app, s, conversation) = budgeted_conversation("retrier").await;
    let mut db = app.db().await;
    let (claim, hold) = begun_turn(&mut db, s.user_id, conversation).await;
    assert!(!db.is_broken());
    let usage = NewUsage {
        user_id: s.user_id,
        conversation_id: Some(conversation),
        message_id: None,
        model: "m".into(),
        fallback_from: None,
        fallback_reason: None,
        input_tokens: 50,
        output_tokens: 10,
        charged: 60,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost: None,
    };
    let finish = |rows: Vec<NewMessage>| {
        (
            rows,
            vec![usage.clone()],
            Some((hold.clone(), Spend::tokens(60))),
        )
    };

    // The second reply row names a conversation that does not exist: the foreign key refuses it.
    let (rows, usage_rows, settle) = finish(vec![
        NewMessage::complete(conversation, MessageRole::Assistant, "kept?"),
        NewMessage::complete(uuid::Uuid::new_v4(), MessageRole::Assistant, "orphan"),
    ]);
    let err = turn::finish(
        &mut db,
        turn::Finish {
            conversation_id: conversation,
            turn_id: claim.turn_id,
            rows,
            usage_rows,
            audit_rows: Vec::new(),
            settle,
            end: serde_json::Value::Null,
        },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("foreign key"), "{err}");
    assert!(
        !db.is_broken(),
        "a rolled-back transaction leaves a usable connection"
    );
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!((totals.spent, totals.holds, totals.ledger), (0, 1, 0));
    assert_eq!(totals.reserved, hold.amount);
    assert!(turn::is_active(&mut db, conversation).await.unwrap());

    let (rows, usage_rows, settle) = finish(vec![NewMessage::complete(
        conversation,
        MessageRole::Assistant,
        "hello",
    )]);
    turn::finish(
        &mut db,
        turn::Finish {
            conversation_id: conversation,
            turn_id: claim.turn_id,
            rows,
            usage_rows,
            audit_rows: Vec::new(),
            settle,
            end: serde_json::Value::Null,
        },
    )
    .await
    .unwrap();
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!(
        (totals.spent, totals.reserved, totals.holds, totals.ledger),
        (60, 0, 0, 60)
    );
    assert!(!turn::is_active(&mut db, conversation).await.unwrap());
    let contents = stored_contents(&app, &s.access, conversation).await;
    assert_eq!(contents, ["hi", "hello"]);
}

/// diesel-async does not know about a hand-rolled transaction, so a future dropped inside one
/// must leave its connection marked broken: the pool then discards it instead of handing the
/// next request a connection that is still inside someone else's transaction.
#[tokio::test]
async fn a_pipelined_transaction_dropped_half_way_breaks_its_connection() {
    use agentchat::db::pipelined::Pipelined;
    use agentchat::db::prepared::sql;
    use diesel_async::pooled_connection::PoolableConnection;

    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    #[derive(diesel::QueryableByName)]
    struct State {
        #[diesel(sql_type = diesel::sql_types::Text)]
        state: String,
    }

    let app = TestApp::builder().start().await;
    let mut db = app.db().await;
    {
        let mut tx = Pipelined::open(&mut db);
        let read = sql("SELECT pg_backend_pid() AS pid").get_result::<Pid>(tx.conn());
        let pid = tx.begin_with(read).await.unwrap().pid;
        // Dropped here, neither committed nor rolled back.
        let state: State = diesel::sql_query("SELECT state FROM pg_stat_activity WHERE pid = $1")
            .bind::<diesel::sql_types::Integer, _>(pid)
            .get_result(&mut app.db().await)
            .await
            .unwrap();
        assert_eq!(state.state, "idle in transaction");
    }
    assert!(db.is_broken());
}

/// A turn's start is committed by its task, alongside the first model call. If the task dies
/// first, dropping the start closes its connection at once: Postgres rolls the start back and
/// the conversation's row lock is free, where a connection parked in the pool would keep the
/// conversation (and the budget period row) locked until the pool next looked at it.
#[tokio::test]
async fn a_start_dropped_before_its_commit_keeps_nothing_and_locks_nothing() {
    use agentchat::turn::testing::PendingStart;

    let (app, s, conversation) = budgeted_conversation("orphan").await;
    let pool = agentchat::db::build_pool(&test_settings(&app.database_url).database).unwrap();
    let mut pooled = pool.get().await.unwrap();
    let claim = new_claim(s.user_id);
    let first = started(start_turn(&mut pooled, &claim, conversation, "lost").await);
    drop(PendingStart::new(
        pooled,
        first.committing,
        uuid::Uuid::new_v4(),
    ));

    let mut db = app.db().await;
    let second = tokio::time::timeout(
        Duration::from_secs(5),
        start_turn(&mut db, &new_claim(s.user_id), conversation, "kept"),
    )
    .await
    .expect("the conversation is still locked by the dropped start");
    started(second).committing.wait(&mut db).await.unwrap();
    let contents = stored_contents(&app, &s.access, conversation).await;
    assert_eq!(contents, ["kept"]);
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!(totals.holds, 1, "only the second start's hold");
}

/// A fresh server with a user on a limited budget and one of their conversations.
pub(crate) async fn budgeted_conversation(username: &str) -> (TestApp, Session, uuid::Uuid) {
    let app = TestApp::builder().start().await;
    let admin = app.signed_up("boss").await;
    let user = app.signed_up(username).await;
    app.set_budget(&admin.access, user.user_id, Some(1_000_000))
        .await;
    let conversation = app.new_conversation(&user.access).await.parse().unwrap();
    (app, user, conversation)
}

/// A turn begun and committed on `db`: its claim and the first call's hold.
pub(crate) async fn begun_turn(
    db: &mut AsyncPgConnection,
    user_id: uuid::Uuid,
    conversation: uuid::Uuid,
) -> (
    agentchat::turn::sql::Claim,
    agentchat::db::models::budget::Hold,
) {
    let claim = new_claim(user_id);
    let begun = started(start_turn(db, &claim, conversation, "hi").await);
    begun.committing.wait(db).await.unwrap();
    (claim, begun.hold)
}

pub(crate) fn new_claim(user_id: uuid::Uuid) -> agentchat::turn::sql::Claim {
    agentchat::turn::sql::Claim {
        user_id,
        token_version: 0,
        turn_id: uuid::Uuid::new_v4(),
        stale_after: Duration::from_secs(600),
        process_id: uuid::Uuid::nil(),
        idempotency: None,
        new_conversation: None,
        api_key: None,
        max_messages: 5_000,
    }
}

/// What starting a turn through the storage layer gave.
pub(crate) type TurnStart = Result<agentchat::turn::sql::Started, agentchat::turn::sql::Refusal>;

/// Begins a turn through the storage layer: a 50-token estimate, up to 100 tokens out
/// (at least 10).
pub(crate) async fn start_turn(
    conn: &mut diesel_async::AsyncPgConnection,
    claim: &agentchat::turn::sql::Claim,
    conversation: uuid::Uuid,
    content: &str,
) -> diesel::QueryResult<TurnStart> {
    match open_turn(conn, claim, conversation, content).await? {
        Ok(opened) => opened.reserve(50).await,
        Err(refusal) => Ok(Err(refusal)),
    }
}

/// The first round trip of [`start_turn`]: the claim, the reads and the budget period's lock.
pub(crate) async fn open_turn<'c>(
    conn: &'c mut diesel_async::AsyncPgConnection,
    claim: &agentchat::turn::sql::Claim,
    conversation: uuid::Uuid,
    content: &str,
) -> diesel::QueryResult<Result<agentchat::turn::sql::Opened<'c>, agentchat::turn::sql::Refusal>> {
    use agentchat::db::models::message::NewMessage;
    use agentchat::turn::sql;
    let ask = sql::BudgetAsk {
        price: None,
        max_output: 100,
        min_output: 10,
        now: chrono::Utc::now(),
        hold_ttl: Duration::from_secs(600),
    };
    let message = NewMessage::complete(conversation, MessageRole::User, content);
    sql::open(conn, claim.clone(), message, ask, u64::MAX, None).await
}

pub(crate) fn started(begun: diesel::QueryResult<TurnStart>) -> agentchat::turn::sql::Started {
    match begun.unwrap() {
        Ok(started) => started,
        Err(refusal) => panic!("turn refused: {refusal:?}"),
    }
}

/// The contents of the conversation's stored messages, in order.
async fn stored_contents(app: &TestApp, token: &str, conversation: uuid::Uuid) -> Vec<String> {
    let stored = app.conversation(token, &conversation.to_string()).await;
    stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

async fn count(db: &mut AsyncPgConnection, query: &str, user: uuid::Uuid) -> i64 {
    diesel::sql_query(query)
        .bind::<diesel::sql_types::Uuid, _>(user)
        .get_result::<Count>(db)
        .await
        .unwrap()
        .n
}

/// Between two model calls the settlement and the audit rows commit before a reservation that
/// needs more statements (a new period began mid-turn). When those fail, the step is still
/// stored and must say so: the turn would otherwise store its audit rows a second time.
#[tokio::test]
async fn a_reservation_failing_after_the_step_committed_reports_the_step_stored() {
    use agentchat::turn::sql as turn;

    let (app, s, conversation) = budgeted_conversation("steps").await;
    let mut db = app.db().await;
    let (claim, hold) = begun_turn(&mut db, s.user_id, conversation).await;
    // The next period's row cannot be created.
    diesel::sql_query(
        "CREATE FUNCTION no_new_period() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'no new period'; END $$",
    )
    .execute(&mut db)
    .await
    .unwrap();
    diesel::sql_query(
        "CREATE TRIGGER no_new_period BEFORE INSERT ON budget_periods \
         FOR EACH ROW EXECUTE FUNCTION no_new_period()",
    )
    .execute(&mut db)
    .await
    .unwrap();
    let audit = calculator_audit(s.user_id, "steps", conversation);
    let step = turn::Step {
        settle: Some((hold, Spend::tokens(60))),
        messages: Vec::new(),
        usage: Vec::new(),
        audit: vec![audit],
        input: 0,
        price: None,
        want: 150,
        need: 60,
        now: chrono::Utc::now() + chrono::Duration::days(40),
        hold_ttl: Duration::from_secs(600),
        process_id: uuid::Uuid::nil(),
        turn: HoldTurn {
            turn_id: claim.turn_id,
            conversation_id: conversation,
        },
    };
    let next = turn::next_call(&mut db, s.user_id, &step)
        .await
        .expect("the step itself committed");
    let error = next
        .reserve
        .expect_err("the new period's row cannot be made");
    assert!(error.to_string().contains("no new period"), "{error}");

    let audit_rows = "SELECT count(*) AS n FROM audit_log WHERE user_id = $1";
    assert_eq!(count(&mut db, audit_rows, s.user_id).await, 1);
    let holds = "SELECT count(*) AS n FROM budget_holds WHERE user_id = $1";
    assert_eq!(
        count(&mut db, holds, s.user_id).await,
        0,
        "the hold is settled"
    );
    let spent =
        "SELECT COALESCE(sum(spent), 0)::BIGINT AS n FROM budget_periods WHERE user_id = $1";
    assert_eq!(count(&mut db, spent, s.user_id).await, 60);
}

#[derive(diesel::QueryableByName)]
struct Setting {
    #[diesel(sql_type = diesel::sql_types::Text)]
    idle_in_transaction_session_timeout: String,
}

/// A transaction whose future is dropped half-way leaves its connection idle inside it, with
/// row locks held, until the pool next hands that connection out. Every pooled connection
/// therefore lets Postgres end such a transaction after a minute.
#[tokio::test]
async fn pooled_connections_do_not_hold_a_forgotten_transaction_forever() {
    let app = TestApp::builder().start().await;
    let settings = test_settings(&app.database_url);
    let pool = agentchat::db::build_pool(&settings.database).unwrap();
    let mut conn = pool.get().await.unwrap();
    let shown = diesel::sql_query("SHOW idle_in_transaction_session_timeout")
        .get_result::<Setting>(&mut *conn)
        .await
        .unwrap();
    assert_eq!(shown.idle_in_transaction_session_timeout, "1min");
}

/// `begin` locks the conversation row, then the budget row; `finish` takes them in the same
/// order, so the two cannot deadlock (a turn taking over a stale claim meets the old turn's
/// `finish` on both rows). Shown with the budget row held elsewhere: the waiting `finish`
/// already holds the conversation row.
#[tokio::test]
async fn finishing_locks_the_conversation_before_the_budget() {
    use agentchat::turn::sql as turn;

    let (app, s, conversation) = budgeted_conversation("ordered").await;
    let mut db = app.db().await;
    let (claim, hold) = begun_turn(&mut db, s.user_id, conversation).await;

    let mut holder = app.db().await;
    diesel::sql_query("BEGIN")
        .execute(&mut holder)
        .await
        .unwrap();
    diesel::sql_query("SELECT 1 FROM budget_periods WHERE user_id = $1 FOR UPDATE")
        .bind::<diesel::sql_types::Uuid, _>(s.user_id)
        .execute(&mut holder)
        .await
        .unwrap();
    let finishing = tokio::spawn(async move {
        let result = turn::finish(
            &mut db,
            turn::Finish {
                conversation_id: conversation,
                turn_id: claim.turn_id,
                rows: Vec::new(),
                usage_rows: Vec::new(),
                audit_rows: Vec::new(),
                settle: Some((hold, Spend::tokens(10))),
                end: serde_json::Value::Null,
            },
        )
        .await;
        result.map(|()| db)
    });
    let mut probe = app.db().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while lock_waiters(&mut probe).await == 0 {
        assert!(std::time::Instant::now() < deadline, "finish never waited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let conversation_free =
        diesel::sql_query("SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE NOWAIT")
            .bind::<diesel::sql_types::Uuid, _>(conversation)
            .execute(&mut probe)
            .await;
    assert!(
        conversation_free.is_err(),
        "finish waits for the budget row without holding the conversation row"
    );

    diesel::sql_query("COMMIT")
        .execute(&mut holder)
        .await
        .unwrap();
    finishing
        .await
        .unwrap()
        .expect("finish completes once the budget row is free");
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!(totals.holds, 0);
}

/// Sessions of this database waiting for a lock.
pub(crate) async fn lock_waiters(db: &mut AsyncPgConnection) -> i64 {
    diesel::sql_query(
        "SELECT count(*) AS n FROM pg_stat_activity \
         WHERE wait_event_type = 'Lock' AND datname = current_database()",
    )
    .get_result::<Count>(db)
    .await
    .unwrap()
    .n
}

/// A long conversation is read only as far back as the context window could reach, and the
/// model input built from that is exactly the one built from the whole history: with tool
/// calls, incomplete calls with orphaned results, empty replies and multi-byte text, at
/// every window size from nothing to everything.
#[tokio::test]
async fn reading_only_the_recent_history_builds_the_same_model_input() {
    use agentchat::db::models::message::{self, NewMessage};
    use agentchat::turn::testing as context;

    let app = TestApp::builder().start().await;
    let s = app.signed_up("longtalk").await;
    let conversation: uuid::Uuid = app.new_conversation(&s.access).await.parse().unwrap();
    let mut db = app.db().await;
    let msg = |role: &str, content: String| {
        NewMessage::complete(conversation, role.parse().unwrap(), &content)
    };
    let with_calls = |content: &str, ids: &[&str]| {
        let mut m = msg("assistant", content.to_owned());
        m.tool_calls = Some(serde_json::Value::Array(
            ids.iter()
                .map(|id| serde_json::json!({"id": id, "name": "calculator", "arguments": {"expression": "6*7"}}))
                .collect(),
        ));
        m
    };
    let result = |id: &str, content: String| {
        let mut m = msg("tool", content);
        m.tool_call_id = Some(id.to_owned());
        m
    };
    let mut rows = Vec::new();
    for i in 0..12 {
        rows.push(msg(
            "user",
            format!("question {i}: {}", "why? ".repeat(i * 7)),
        ));
        match i % 4 {
            0 => rows.push(msg(
                "assistant",
                format!("answer {i} 🦀 {}", "ünïcödé ".repeat(i * 5)),
            )),
            1 => {
                rows.push(with_calls("", &[&format!("a{i}"), &format!("b{i}")]));
                rows.push(result(&format!("a{i}"), "42".repeat(i * 20)));
                rows.push(result(&format!("b{i}"), "六七".repeat(i * 9)));
                rows.push(msg("assistant", format!("both done {i}")));
            }
            // A call whose second result never came: the stored result is dropped with it.
            2 => {
                rows.push(with_calls(
                    &format!("trying {i}"),
                    &[&format!("c{i}"), &format!("d{i}")],
                ));
                rows.push(result(&format!("c{i}"), "x".repeat(3000)));
            }
            _ => rows.push(msg("assistant", String::new())),
        }
    }
    message::insert_many(&mut db, &rows).await.unwrap();
    let all = message::list(&mut db, conversation).await.unwrap();
    assert_eq!(all.len(), rows.len());

    let (system, new_message, reserve) = ("You are helpful.", "and now?", 100);
    // Then again with the oldest messages stored before their cost was: they count nothing,
    // so they are always read.
    for older_unpriced in [false, true] {
        if older_unpriced {
            diesel::sql_query(
                "UPDATE messages SET history_cost = NULL WHERE seq IN \
                 (SELECT seq FROM messages ORDER BY seq LIMIT 10)",
            )
            .execute(&mut db)
            .await
            .unwrap();
        }
        let mut cut_somewhere = false;
        let opening = context::Opening::system_only(system);
        for window in (0..3_500).chain([u64::MAX / 2]) {
            let room = context::history_room(system, new_message, window, reserve);
            let recent =
                agentchat::db::models::message_recent::list_recent(&mut db, conversation, room)
                    .await
                    .unwrap();
            // The same statement counts the whole conversation, kept or not.
            assert_eq!(recent.total, all.len() as i64, "window {window}");
            let recent = recent.messages;
            assert!(
                all.ends_with_ids(&recent),
                "not a suffix at window {window}"
            );
            cut_somewhere |= !recent.is_empty() && recent.len() < all.len();
            assert_eq!(
                context::assemble(
                    &opening,
                    &recent,
                    agentchat::llm::ChatMessage::user(new_message),
                    window,
                    reserve
                ),
                context::assemble(
                    &opening,
                    &all,
                    agentchat::llm::ChatMessage::user(new_message),
                    window,
                    reserve
                ),
                "window {window}: {} of {} messages read",
                recent.len(),
                all.len()
            );
        }
        assert!(cut_somewhere, "no window cut the history");
    }
}

trait EndsWithIds {
    fn ends_with_ids(&self, suffix: &[agentchat::db::models::message::Message]) -> bool;
}

impl EndsWithIds for Vec<agentchat::db::models::message::Message> {
    fn ends_with_ids(&self, suffix: &[agentchat::db::models::message::Message]) -> bool {
        suffix.len() <= self.len()
            && self[self.len() - suffix.len()..]
                .iter()
                .zip(suffix)
                .all(|(a, b)| a.id == b.id)
    }
}

/// A turn ended elsewhere (its process looked dead and another process stored it as
/// interrupted) stores nothing when it finishes after all; a finish repeated after its commit
/// went through is recognised the same way.
#[tokio::test]
async fn a_finish_without_its_claim_stores_nothing() {
    use agentchat::db::models::message::NewMessage;
    use agentchat::turn::sql as turn;

    let (app, s, conversation) = budgeted_conversation("latecomer").await;
    let mut db = app.db().await;
    let (claim, hold) = begun_turn(&mut db, s.user_id, conversation).await;
    diesel::sql_query("UPDATE conversations SET active_turn_id = NULL WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(conversation)
        .execute(&mut db)
        .await
        .unwrap();
    let err = turn::finish(
        &mut db,
        turn::Finish {
            conversation_id: conversation,
            turn_id: claim.turn_id,
            rows: vec![NewMessage::complete(
                conversation,
                MessageRole::Assistant,
                "too late",
            )],
            usage_rows: Vec::new(),
            audit_rows: Vec::new(),
            settle: Some((hold, Spend::tokens(60))),
            end: serde_json::Value::Null,
        },
    )
    .await
    .unwrap_err();
    assert!(turn::is_claim_lost(&err), "{err}");
    let contents = stored_contents(&app, &s.access, conversation).await;
    assert_eq!(contents, ["hi"]);
    let totals = app.budget_totals(s.user_id).await;
    assert_eq!(
        (totals.spent, totals.holds),
        (0, 1),
        "nothing settled either"
    );
}
