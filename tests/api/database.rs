use std::time::Duration;

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
    let app = spawn_app().await;
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
