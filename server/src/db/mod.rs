//! Postgres access: the async pool for the request path, database creation and embedded
//! migrations applied under an advisory lock so that several replicas may start at once.

pub mod admission;
pub mod conflict;
mod error;
pub mod models;
pub mod pipelined;
pub mod prepared;
pub mod rows_insert;
pub mod schema;
pub mod sealed;
pub mod sweeper;

use std::time::Duration;

use anyhow::Context;
use diesel::Connection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use futures_util::FutureExt;

use crate::config::DatabaseSettings;
use crate::shard::{self, Sharded};

#[cfg(test)]
pub use error::database_error;
pub use error::{connect_cause, DbError};

/// The migrations in `migrations/`, compiled into the binary (touch this file when adding one).
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations");

/// Key of the advisory lock that serialises migrations across replicas.
const MIGRATION_LOCK_KEY: i64 = 0x4147_454e_5443_4854; // "AGENTCHT"

type ShardPool = diesel_async::pooled_connection::deadpool::Pool<AsyncPgConnection>;
pub type PoolError = diesel_async::pooled_connection::deadpool::PoolError;
pub type PooledConn = diesel_async::pooled_connection::deadpool::Object<AsyncPgConnection>;

/// The request-path pool: one shard per thread ([`crate::shard`]), so that a connection is
/// used on the thread whose runtime drives it. The configured size is split between them.
#[derive(Clone)]
pub struct Pool {
    shards: Sharded<ShardPool>,
    /// Turn starts waiting for a connection ([`admission`]).
    starts: admission::StartQueue,
    /// Per shard, the readiness probe's own connection, opened only when the shard has no
    /// free one ([`is_ready`]).
    probes: Sharded<tokio::sync::Mutex<Option<AsyncPgConnection>>>,
    url: crate::config::DatabaseUrl,
}

/// One shard's connections. A worker's requests only draw on its own shard, so a shard can
/// run dry while the pool as a whole looks half used: ops need them one by one.
#[derive(Debug, Clone, Copy)]
pub struct ShardStatus {
    pub max_size: usize,
    /// Open connections, in use or idle.
    pub size: usize,
    pub available: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
}

impl Pool {
    /// A connection from this thread's shard, waiting up to the acquire timeout.
    pub async fn get(&self) -> Result<PooledConn, PoolError> {
        self.shards.current().get().await
    }

    /// A connection from this thread's shard, waiting up to `wait`.
    pub async fn get_within(&self, wait: Duration) -> Result<PooledConn, PoolError> {
        let shard = self.shards.current();
        let mut timeouts = shard.timeouts();
        timeouts.wait = Some(wait);
        shard.timeout_get(&timeouts).await
    }

    /// A connection from this thread's shard only if one is free right now (idle, or room to
    /// open one): never waits in the pool's queue. For work that steps back under pressure
    /// (a conversation's title) rather than stand in front of turns.
    pub async fn get_free_now(&self) -> Result<PooledConn, PoolError> {
        self.get_within(Duration::ZERO).await
    }

    /// Each shard's connections, in shard order.
    pub fn status(&self) -> Vec<ShardStatus> {
        self.shards
            .all()
            .iter()
            .map(|shard| {
                let s = shard.status();
                ShardStatus {
                    max_size: s.max_size,
                    size: s.size,
                    available: s.available,
                    waiting: s.waiting,
                }
            })
            .collect()
    }
}

/// Session settings of every pooled connection. A transaction whose future was dropped
/// half-way (a panic, say) leaves its connection idle inside the transaction, holding row
/// locks on a conversation or a budget period, until the pool next hands that connection
/// out and finds it broken. Our transactions never wait on the client for more than a few
/// milliseconds, so Postgres may end such a session after a minute. No statement of the
/// request path may run longer than `database.statement_timeout_ms`.
fn pooled_session_setup(statement_timeout: Duration) -> String {
    format!(
        "SET idle_in_transaction_session_timeout = '60s'; SET statement_timeout = {}",
        statement_timeout.as_millis()
    )
}

async fn establish_for_pool(url: &str, setup: &str) -> diesel::ConnectionResult<AsyncPgConnection> {
    use diesel_async::SimpleAsyncConnection;
    let mut conn = AsyncPgConnection::establish(url).await?;
    conn.batch_execute(setup)
        .await
        .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Builds the request-path pool. Connections are opened lazily, so this succeeds while
/// Postgres is down and the pool recovers by itself when it is back.
pub fn build_pool(settings: &DatabaseSettings) -> anyhow::Result<Pool> {
    let sizes = shard::split(settings.pool_size, shard::count());
    let shards = Sharded::build(sizes.len(), |i| {
        let mut config = ManagerConfig::default();
        // A dead connection shows up as `is_broken` and is dropped when the pool next hands
        // it out; a ping per checkout would add a round trip to every request.
        config.recycling_method = RecyclingMethod::Fast;
        let setup = std::sync::Arc::new(pooled_session_setup(settings.statement_timeout));
        config.custom_setup = Box::new(move |url| {
            let setup = setup.clone();
            let url = url.to_owned();
            async move { establish_for_pool(&url, &setup).await }.boxed()
        });
        let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
            settings.url.expose(),
            config,
        );
        ShardPool::builder(manager)
            .max_size(sizes[i])
            .wait_timeout(Some(settings.acquire_timeout))
            .create_timeout(Some(settings.acquire_timeout))
            .recycle_timeout(Some(settings.acquire_timeout))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .context("building the database pool")
    })?;
    Ok(Pool {
        shards,
        starts: admission::StartQueue::new(settings.turn_start_queue, &sizes),
        probes: Sharded::new(sizes.len(), |_| tokio::sync::Mutex::new(None)),
        url: settings.url.clone(),
    })
}

/// A pooled connection, or [`DbError::Unavailable`] when the pool is exhausted or Postgres
/// is unreachable.
pub async fn conn(pool: &Pool) -> Result<PooledConn, DbError> {
    Ok(pool.get().await?)
}

/// A connection for work that must not be dropped (storing a finished turn): waits up to
/// `wait` for a free one instead of the request path's short acquire timeout, so a burst of
/// turns ending together queues for the pool rather than failing.
pub async fn conn_patiently(pool: &Pool, wait: Duration) -> Result<PooledConn, PoolError> {
    pool.get_within(wait).await
}

/// True when Postgres answers a trivial query within `timeout`. A free pooled connection is
/// used if there is one; when the pool is busy (a burst of turn starts queued for it), the
/// probe does not wait behind them but asks on its own connection (one per shard, kept), so
/// the answer says whether the database is reachable, not whether the pool is busy.
pub async fn is_ready(pool: &Pool, timeout: Duration) -> bool {
    let check = async {
        if let Ok(mut c) = pool.get_within(Duration::ZERO).await {
            return select_one(&mut c).await;
        }
        let mut probe = pool.probes.current().lock().await;
        if probe.is_none() {
            *probe = AsyncPgConnection::establish(pool.url.expose()).await.ok();
        }
        let answered = match probe.as_mut() {
            Some(c) => select_one(c).await,
            None => false,
        };
        if !answered {
            // Broken or never opened: the next probe opens a fresh one.
            *probe = None;
        }
        answered
    };
    matches!(tokio::time::timeout(timeout, check).await, Ok(true))
}

async fn select_one(c: &mut AsyncPgConnection) -> bool {
    // Raw SQL: a health probe that reads no table.
    diesel::sql_query("SELECT 1").execute(c).await.is_ok()
}

/// Creates the database named in `url` if it does not exist yet.
pub async fn ensure_database_exists(url: &str) -> anyhow::Result<()> {
    let parsed = url::Url::parse(url).context("parsing DATABASE_URL")?;
    let name = parsed.path().trim_start_matches('/').to_owned();
    if name.is_empty() {
        anyhow::bail!("DATABASE_URL names no database");
    }
    if AsyncPgConnection::establish(url).await.is_ok() {
        return Ok(());
    }
    let mut maintenance = parsed.clone();
    maintenance.set_path("/postgres");
    let mut conn = AsyncPgConnection::establish(maintenance.as_str())
        .await
        .context("connecting to the `postgres` maintenance database to create ours")?;
    // Raw SQL: `pg_database` is a system catalog, not in the schema.
    let exists: i64 = diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(&name)
        .get_result::<Count>(&mut conn)
        .await
        .context("looking up the database")?
        .n;
    if exists == 0 {
        // Raw SQL: CREATE DATABASE.
        let create = format!("CREATE DATABASE {}", quote_ident(&name));
        if let Err(e) = diesel::sql_query(create).execute(&mut conn).await {
            // Another replica may have created it in the meantime.
            let msg = e.to_string();
            if !(msg.contains("already exists") || msg.contains("duplicate key")) {
                return Err(e).context("creating the database");
            }
        }
        tracing::info!(database = %name, "created database");
    }
    Ok(())
}

/// Why Postgres at `url` cannot be reached, in the driver's own words with every cause
/// (diesel's connection error keeps only "error connecting to server"); `None` when a
/// plain connection succeeds (the failure was elsewhere).
pub async fn why_unreachable(url: &str) -> Option<String> {
    let attempt = tokio_postgres::connect(url, tokio_postgres::NoTls);
    match tokio::time::timeout(std::time::Duration::from_secs(5), attempt).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => {
            let mut out = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                let text = s.to_string();
                if !out.contains(&text) {
                    out.push_str(": ");
                    out.push_str(&text);
                }
                source = s.source();
            }
            Some(out)
        }
        Err(_) => Some("connecting timed out after 5 s".to_owned()),
    }
}

/// Applies pending migrations while holding a Postgres advisory lock.
pub async fn run_migrations(url: &str) -> anyhow::Result<()> {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let mut conn = <AsyncConnectionWrapper<AsyncPgConnection> as Connection>::establish(&url)
            .context("connecting to run migrations")?;
        // Raw SQL: advisory locks (also the unlock below).
        let lock = diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"));
        diesel::RunQueryDsl::execute(lock, &mut conn).context("taking the migration lock")?;
        let result = conn
            .run_pending_migrations(MIGRATIONS)
            .map(|applied| applied.len())
            .map_err(|e| anyhow::anyhow!("running migrations: {e}"));
        let unlock = diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"));
        let _ = diesel::RunQueryDsl::execute(unlock, &mut conn);
        let applied = result?;
        if applied > 0 {
            tracing::info!(applied, "applied database migrations");
        }
        Ok(())
    })
    .await
    .context("migration task failed")?
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

pub use crate::domain::{pg_safe_json, pg_safe_text};

/// Quotes an SQL identifier (doubling embedded quotes).
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
