//! Test support: start the real server on port 0 against a fresh database cloned from a
//! migrated template, and talk to it over HTTP like any client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod builder;
pub mod fake_search;
pub mod fake_upstream;
pub mod mcp_peers;
pub mod oidc;
pub mod pg_cluster;
pub mod pg_proxy;
pub mod pgvector;
pub mod tiny_server;

use std::hash::{Hash, Hasher};
use std::time::Duration;

pub use builder::AppBuilder;

use agentchat::config::{DatabaseUrl, Settings};
use agentchat::startup::Application;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

/// Where the tests find Postgres (the maintenance database is derived from it).
pub fn base_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn url_for(db: &str) -> String {
    let mut u = url::Url::parse(&base_url()).expect("TEST_DATABASE_URL");
    u.set_path(&format!("/{db}"));
    u.to_string()
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// Name of a migrated template database for the current migrations (built once).
async fn template() -> String {
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("agentchat_tmpl_{:016x}", migrations_hash());
            let mut admin = AsyncPgConnection::establish(&url_for("postgres"))
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
                agentchat::db::run_migrations(&url_for(&building))
                    .await
                    .unwrap();
                diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {name}"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            }
            // Marks the template as in use, so that a run of another checkout (another
            // migration set) in the same cluster keeps it for the next two hours.
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

fn migrations_hash() -> u64 {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let mut files: Vec<_> = walk(&dir);
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.hash(&mut h);
        std::fs::read(&f).unwrap().hash(&mut h);
    }
    h.finish()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
}

async fn database_exists(conn: &mut AsyncPgConnection, name: &str) -> bool {
    !diesel::sql_query("SELECT datname FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(name)
        .load::<Name>(conn)
        .await
        .unwrap()
        .is_empty()
}

/// Test databases are named `agentchat_t_<unix secs>_<random>`; drop those over 2 hours old.
async fn drop_stale_test_databases(conn: &mut AsyncPgConnection) {
    let names =
        diesel::sql_query("SELECT datname FROM pg_database WHERE datname LIKE 'agentchat_t_%'")
            .load::<Name>(conn)
            .await
            .unwrap_or_default();
    let now = chrono::Utc::now().timestamp();
    for n in names {
        let born = n
            .datname
            .split('_')
            .nth(2)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(now);
        if now - born > 7200 {
            let _ = diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                n.datname
            ))
            .execute(conn)
            .await;
        }
    }
}

/// Templates of other migration sets are dropped once no run has used them for two hours
/// (their comment holds the last use, in unix seconds); one without a mark is from an older
/// test harness. Sooner would pull a template from under a parallel run of another checkout.
async fn drop_old_templates(conn: &mut AsyncPgConnection, current: &str) {
    let names = diesel::sql_query(
        "SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') AS used \
         FROM pg_database WHERE datname LIKE 'agentchat_tmpl_%'",
    )
    .load::<Template>(conn)
    .await
    .unwrap_or_default();
    let now = chrono::Utc::now().timestamp();
    for n in names.into_iter().filter(|n| n.datname != current) {
        let used = n.used.trim().parse::<i64>().unwrap_or(0);
        if now - used <= 7200 {
            continue;
        }
        let _ = diesel::sql_query(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            n.datname
        ))
        .execute(conn)
        .await;
    }
}

#[derive(diesel::QueryableByName)]
struct Template {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    used: String,
}

/// Drops its test database when dropped, so a test run leaves no databases behind. Runs the
/// `DROP DATABASE` on a thread of its own: `Drop` cannot await, and the test's runtime may
/// be the current thread.
pub struct DatabaseGuard {
    url: String,
}

impl DatabaseGuard {
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for DatabaseGuard {
    fn drop(&mut self) {
        let Some(name) = url::Url::parse(&self.url)
            .ok()
            .map(|u| u.path().trim_start_matches('/').to_owned())
            .filter(|n| n.starts_with("agentchat_t_"))
        else {
            return;
        };
        // On the cluster it is in: the shared one, or the pgvector one.
        let admin_url =
            pgvector::maintenance_url_of(&self.url).unwrap_or_else(|| url_for("postgres"));
        let dropper = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                if let Ok(mut admin) = AsyncPgConnection::establish(&admin_url).await {
                    let _ =
                        diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                            .execute(&mut admin)
                            .await;
                }
            });
        });
        let _ = dropper.join();
    }
}

/// A fresh, migrated database that is dropped with the guard.
pub async fn fresh_database_guard() -> DatabaseGuard {
    DatabaseGuard {
        url: fresh_database().await,
    }
}

/// A fresh, migrated database of this test's own; returns its URL. Prefer
/// [`fresh_database_guard`] (or [`TestApp::builder`]), which also drop it afterwards; a database
/// made here is dropped by a later run once it is two hours old.
pub async fn fresh_database() -> String {
    let template = template().await;
    let name = format!(
        "agentchat_t_{}_{}",
        chrono::Utc::now().timestamp(),
        uuid::Uuid::new_v4().simple()
    );
    let mut admin = AsyncPgConnection::establish(&url_for("postgres"))
        .await
        .unwrap();
    let mut attempt = 0;
    loop {
        match diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut admin)
            .await
        {
            Ok(_) => break,
            Err(e) if attempt < 20 => {
                attempt += 1;
                eprintln!("retrying CREATE DATABASE: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating test database: {e}"),
        }
    }
    url_for(&name)
}

/// Settings for a test server on port 0 against `database_url`.
pub fn test_settings(database_url: &str) -> Settings {
    let mut s = Settings::default();
    s.database.url = DatabaseUrl::new(database_url);
    s.database.create_if_missing = false;
    s.database.pool_size = 8;
    // A title call after each first answer would be one more upstream request in every
    // test; the tests of titles turn it on.
    s.llm.auto_titles = false;
    s.bind = "127.0.0.1:0".to_owned();
    s.tools.workspace_dir = std::env::temp_dir().join(format!(
        "agentchat-test-ws-{}",
        uuid::Uuid::new_v4().simple()
    ));
    s.knowledge.extractor = built_agentchat();
    s
}

/// The `agentchat` binary cargo built beside this test binary (`target/debug/agentchat`):
/// the server under test runs inside the test binary, whose own executable cannot be the
/// document extraction child.
pub fn built_agentchat() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("agentchat");
    Some(path.to_string_lossy().into_owned())
}

/// A running server and a client for it.
pub struct TestApp {
    pub address: String,
    /// Root of the users' workspace directories.
    pub workspace_dir: std::path::PathBuf,
    pub port: u16,
    pub database_url: String,
    pub client: reqwest::Client,
    /// Drops the test database and workspace once the last server on them is gone.
    _cleanup: Cleanup,
}

/// Test servers alive in this process: their database URL and workspace directory.
static LIVE_SERVERS: std::sync::Mutex<Vec<(String, std::path::PathBuf)>> =
    std::sync::Mutex::new(Vec::new());

/// Removes a test server's database and workspace once no live server uses them any more.
struct Cleanup {
    database_url: String,
    workspace_dir: std::path::PathBuf,
}

impl Cleanup {
    fn new(database_url: &str, workspace_dir: &std::path::Path) -> Self {
        LIVE_SERVERS
            .lock()
            .unwrap()
            .push((database_url.to_owned(), workspace_dir.to_owned()));
        Self {
            database_url: database_url.to_owned(),
            workspace_dir: workspace_dir.to_owned(),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let (database_unused, workspace_unused) = {
            let mut live = LIVE_SERVERS.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = live
                .iter()
                .position(|(u, w)| *u == self.database_url && *w == self.workspace_dir)
            {
                live.swap_remove(i);
            }
            (
                !live.iter().any(|(u, _)| *u == self.database_url),
                !live.iter().any(|(_, w)| *w == self.workspace_dir),
            )
        };
        if workspace_unused && self.workspace_dir.starts_with(std::env::temp_dir()) {
            let _ = std::fs::remove_dir_all(&self.workspace_dir);
        }
        if database_unused {
            drop(DatabaseGuard {
                url: std::mem::take(&mut self.database_url),
            });
        }
    }
}

/// Whether a database of this name exists (tests of the suite's own clean-up).
pub async fn test_database_exists(name: &str) -> bool {
    let mut admin = AsyncPgConnection::establish(&url_for("postgres"))
        .await
        .unwrap();
    database_exists(&mut admin, name).await
}

/// A clock tests can move.
#[derive(Clone)]
pub struct TestClock(std::sync::Arc<std::sync::Mutex<chrono::DateTime<chrono::Utc>>>);

impl TestClock {
    pub fn at(t: chrono::DateTime<chrono::Utc>) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(t)))
    }

    pub fn advance(&self, d: chrono::Duration) {
        *self.0.lock().unwrap() += d;
    }

    pub fn clock(&self) -> agentchat::budget::Clock {
        let inner = self.0.clone();
        std::sync::Arc::new(move || *inner.lock().unwrap())
    }
}

/// Starts a server with exactly these settings and clock: the builder's last step (tests
/// start servers with [`TestApp::builder`]).
pub(crate) async fn start_server(settings: Settings, clock: agentchat::budget::Clock) -> TestApp {
    let database_url = settings.database.url.expose().to_owned();
    let workspace_dir = settings.tools.workspace_dir.clone();
    let app = Application::build_with_clock(settings, clock)
        .await
        .expect("server starts");
    let port = app.port();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        _cleanup: Cleanup::new(&database_url, &workspace_dir),
        workspace_dir,
        address: format!("http://127.0.0.1:{port}"),
        port,
        database_url,
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // Below the server's 5 s keep-alive: a pooled connection is never reused just as
            // the server closes it (hyper's `IncompleteMessage` under load).
            .pool_idle_timeout(Duration::from_secs(3))
            .build()
            .unwrap(),
    }
}

/// Tokens from a successful login.
#[derive(Debug, Clone)]
pub struct Session {
    pub user_id: uuid::Uuid,
    pub access: String,
    pub refresh: String,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn register(&self, username: &str, password: &str) -> reqwest::Response {
        self.post_json(
            "/api/auth/register",
            &json!({"username": username, "password": password}),
        )
        .await
    }

    pub async fn login(&self, username: &str, password: &str) -> reqwest::Response {
        self.post_json(
            "/api/auth/login",
            &json!({"username": username, "password": password}),
        )
        .await
    }

    /// Registers `username` (password `password-of-<username>`) and signs in.
    pub async fn signed_up(&self, username: &str) -> Session {
        let password = format!("password-of-{username}");
        let r = self.register(username, &password).await;
        assert_eq!(
            r.status(),
            201,
            "register {username}: {}",
            r.text().await.unwrap()
        );
        let id: Value = r.json().await.unwrap();
        let user_id = id["id"].as_str().unwrap().parse().unwrap();
        let s = self.session_for(username, &password).await;
        Session { user_id, ..s }
    }

    pub async fn session_for(&self, username: &str, password: &str) -> Session {
        let r = self.login(username, password).await;
        assert_eq!(r.status(), 200, "login {username}");
        let body: Value = r.json().await.unwrap();
        Session {
            user_id: uuid::Uuid::nil(),
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
        }
    }

    pub fn get_as(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.client.get(self.url(path)).bearer_auth(token)
    }

    pub fn post_as(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.client.post(self.url(path)).bearer_auth(token)
    }

    pub fn patch_as(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.client.patch(self.url(path)).bearer_auth(token)
    }

    pub fn delete_as(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.client.delete(self.url(path)).bearer_auth(token)
    }

    /// A direct connection to this server's database, for asserting what was stored.
    pub async fn db(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self.database_url)
            .await
            .unwrap()
    }
}

/// Asserts the error shape and code, returning the body.
pub async fn expect_error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    let got = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "unexpected status; body: {body}");
    assert_eq!(
        body["error"]["code"], code,
        "unexpected error code; body: {body}"
    );
    assert!(body["error"]["message"].is_string(), "no message: {body}");
    body
}

/// One parsed server-sent event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    pub data: Value,
}

/// Parses a complete `text/event-stream` body (comments and keep-alives are skipped).
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            Some(SseEvent {
                event: event?,
                data: serde_json::from_str(&data).unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// Names of the events, in order, with consecutive `text_delta`s folded into one.
pub fn event_names(events: &[SseEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if e.event == "text_delta" && out.last().map(String::as_str) == Some("text_delta") {
            continue;
        }
        out.push(e.event.clone());
    }
    out
}

/// All `text_delta` text joined.
pub fn streamed_text(events: &[SseEvent]) -> String {
    events
        .iter()
        .filter(|e| e.event == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap_or_default())
        .collect()
}

impl TestApp {
    /// Creates a conversation and returns its id.
    pub async fn new_conversation(&self, token: &str) -> String {
        self.create_conversation_with(token, json!({})).await
    }

    /// `POST /api/conversations` with `body` (e.g. `{"model": ...}`); returns its id.
    pub async fn create_conversation_with(&self, token: &str, body: Value) -> String {
        let r = self
            .post_as(token, "/api/conversations")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Sends a message; the response is whatever the server answered (stream or error).
    pub async fn send_message(
        &self,
        token: &str,
        conversation: &str,
        content: &str,
    ) -> reqwest::Response {
        self.post_as(
            token,
            &format!("/api/conversations/{conversation}/messages"),
        )
        .json(&json!({"content": content}))
        .send()
        .await
        .unwrap()
    }

    /// Sends a message and reads the whole SSE stream.
    pub async fn chat(&self, token: &str, conversation: &str, content: &str) -> Vec<SseEvent> {
        let r = self.send_message(token, conversation, content).await;
        assert_eq!(r.status(), 200, "chat refused: {}", r.text().await.unwrap());
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        assert_eq!(r.headers()["x-accel-buffering"], "no");
        parse_sse(&r.text().await.unwrap())
    }

    /// The stored conversation with its messages.
    pub async fn conversation(&self, token: &str, id: &str) -> Value {
        self.get_as(token, &format!("/api/conversations/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// The budget row numbers of a user in whatever periods exist: (spent, reserved) summed.
#[derive(diesel::QueryableByName, Debug)]
pub struct BudgetTotals {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub spent: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub reserved: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub rows: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub holds: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub ledger: i64,
}

impl TestApp {
    pub async fn budget_totals(&self, user: uuid::Uuid) -> BudgetTotals {
        let mut db = self.db().await;
        diesel::sql_query(
            "SELECT COALESCE((SELECT sum(spent) FROM budget_periods WHERE user_id = $1), 0)::BIGINT AS spent, \
                    COALESCE((SELECT sum(reserved) FROM budget_periods WHERE user_id = $1), 0)::BIGINT AS reserved, \
                    (SELECT count(*) FROM budget_periods WHERE user_id = $1)::BIGINT AS rows, \
                    (SELECT count(*) FROM budget_holds WHERE user_id = $1)::BIGINT AS holds, \
                    COALESCE((SELECT sum(charged) FROM usage_records WHERE user_id = $1), 0)::BIGINT AS ledger",
        )
        .bind::<diesel::sql_types::Uuid, _>(user)
        .get_result(&mut db)
        .await
        .unwrap()
    }

    /// `PUT /api/admin/roles/{name}` as an admin; returns the response.
    pub async fn put_role(&self, admin: &str, name: &str, body: Value) -> reqwest::Response {
        self.client
            .put(self.url(&format!("/api/admin/roles/{name}")))
            .bearer_auth(admin)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Puts a file at `path` in the user's workspace (asserting it was stored).
    pub async fn upload(&self, token: &str, path: &str, body: &str) {
        let r = self
            .client
            .put(self.url(&format!("/api/files/{path}")))
            .bearer_auth(token)
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "upload {path}: {}", r.status());
    }

    /// Sets a user's budget override as an admin.
    pub async fn set_budget(&self, admin: &str, user: uuid::Uuid, tokens: Option<i64>) {
        let r = self
            .patch_as(admin, &format!("/api/admin/users/{user}"))
            .json(&json!({"token_budget": tokens}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
}
