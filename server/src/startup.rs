//! Builds the application: database, migrations, secrets, routes, listener.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{middleware, web, App, HttpResponse, HttpServer};
use anyhow::Context;

use crate::auth::jwt::JwtKeys;
use crate::auth::password::PasswordHasher;
use crate::auth::throttle::LoginThrottle;
use crate::budget::{self, Clock};
use crate::cluster::liveness::Liveness;
use crate::cluster::{channel, StopReason};
use crate::config::Settings;
use crate::db;
use crate::error::ApiError;
use crate::files::WorkspaceStore;
use crate::memory::tool::Remember;
use crate::metrics::Metrics;
use crate::routes;
use crate::state::AppState;
use crate::tools::{BuiltinConfig, Registry};
use crate::turn::{RunningTurns, TurnEngine};

mod parts;

pub use parts::prepare_database;
use parts::{jwt_secret, mcp_manager, sandbox_backend};

/// A bound, not yet running server.
pub struct Application {
    port: u16,
    server: Server,
    state: AppState,
    liveness: Liveness,
}

impl Application {
    /// Prepares the database (creating and migrating it as needed), then binds the listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with_clock(settings, budget::system_clock()).await
    }

    /// Like [`Application::build`] with an explicit clock (tests move time to roll budget
    /// periods over without sleeping).
    pub async fn build_with_clock(settings: Settings, clock: Clock) -> anyhow::Result<Self> {
        settings.validate()?;
        prepare_database(&settings).await?;
        let pool = db::build_pool(&settings.database)?;
        let secret = jwt_secret(&settings, &pool).await?;
        let workspaces = Arc::new(
            WorkspaceStore::new(settings.tools.workspace_dir.clone(), settings.tools.quota)
                .with_context(|| {
                    format!(
                        "opening the workspace directory {}",
                        settings.tools.workspace_dir.display()
                    )
                })?
                .with_image_limits(settings.images),
        );
        let metrics = Arc::new(Metrics::new().context("registering metrics")?);
        // The series of the database's and the titles' fixed label sets, shown from the
        // start (their owners know the labels; metrics knows neither room).
        for t in crate::db::conflict::Transaction::ALL {
            metrics.db_conflicts.with_label_values(&[t.label()]);
        }
        for outcome in crate::turn::title::Outcome::ALL {
            metrics.titles.with_label_values(&[outcome.label()]);
        }
        let liveness = Liveness::new(settings.durable.replica_timeout);
        let turns = RunningTurns::default();
        let mcp = mcp_manager(&settings, &pool).await?;
        mcp.keep_images_in(workspaces.clone());
        let knowledge = crate::knowledge::start(
            &settings,
            &pool,
            liveness.process_id,
            clock.clone(),
            metrics.clone(),
        )
        .await?;
        let sandbox = sandbox_backend(&settings, &metrics).await;
        let web_search = crate::websearch::WebSearch::new(
            &settings,
            pool.clone(),
            clock.clone(),
            liveness.process_id,
        )?;
        let fetch_rules: Arc<dyn crate::tools::builtin::http_get::FetchRules> = web_search.clone();
        let mut tools = Registry::builtin(&BuiltinConfig {
            workspace: workspaces.clone(),
            http: settings.tools.http.clone(),
            fetch_rules: Some(fetch_rules),
        })?
        .with_output_cap(settings.llm.tool_output_cap_bytes);
        // Always known (roles list it); without pgvector its calls say why.
        tools.register(crate::knowledge::tool::SearchKnowledge::shared(&knowledge))?;
        tools.register(Remember::shared(pool.clone(), settings.memory.clone()))?;
        tools.register(crate::tools::interpreter::RunPython::shared(
            sandbox.clone(),
            workspaces.clone(),
            pool.clone(),
            metrics.sandbox.clone(),
            crate::tools::interpreter::InterpreterConfig {
                sandbox: settings.sandbox.clone(),
                queue_wait: crate::tools::interpreter::QUEUE_WAIT,
                capture_content: settings.llm.capture_content,
                process_id: liveness.process_id,
            },
        ))?;
        // Always known (roles list it); without a provider its calls say so.
        tools.register(crate::websearch::tool::WebSearchTool::shared(&web_search))?;
        let settings = Arc::new(settings);
        let catalogue = crate::catalogue::Catalogue::build(settings.clone(), &metrics)?;
        let engine = TurnEngine {
            mcp: mcp.clone(),
            turns: turns.clone(),
            process_id: liveness.process_id,
            durable: Arc::new(settings.durable.clone()),
            metrics: metrics.clone(),
            pool: pool.clone(),
            breakers: catalogue.breakers().clone(),
            catalogue: catalogue.clone(),
            tools: tools.clone(),
            settings: Arc::new(settings.llm.clone()),
            clock: clock.clone(),
            http: settings.tools.http.clone(),
            tool_set: Default::default(),
            history: Default::default(),
            workspaces: workspaces.clone(),
        };
        let mut state = AppState {
            web_search,
            knowledge,
            catalogue,
            sso: Arc::new(crate::auth::oidc::Sso::new(&settings, &secret, 0)?),
            metrics,
            workspaces,
            keys: Default::default(),
            engine,
            turns,
            mcp,
            tools,
            clock: clock.clone(),
            uploads: Arc::new(crate::security::gate::ConcurrencyGate::new(
                settings.security.max_concurrent_uploads,
                settings.security.max_concurrent_uploads_per_user,
            )),
            searches: Arc::new(crate::security::gate::ConcurrencyGate::new(
                settings.security.max_concurrent_searches(),
                2,
            )),
            share_reads: Arc::new(crate::sharing::ReadGate::new(
                settings.sharing.reads_per_minute_per_address,
                settings.sharing.reads_per_minute_per_link,
            )),
            sandbox,
            jwt: JwtKeys::new(&secret, settings.auth.access_token_ttl),
            hasher: PasswordHasher::new(settings.auth.max_concurrent_hashes()),
            throttle: Arc::new(LoginThrottle::new(
                settings.auth.account_failure_limit,
                settings.auth.address_failure_limit,
            )),
            pool,
            settings,
        };
        let listener = listen(&state.settings)?;
        let port = listener.local_addr()?.port();
        // The default redirect URL names the bound port.
        state.sso = Arc::new(crate::auth::oidc::Sso::new(&state.settings, &secret, port)?);
        state.sso.spawn_warm_up();
        // Alive before the first turn can name this process; knowing which providers the
        // other processes found down.
        if let Ok(mut conn) = state.pool.get().await {
            let _ = crate::cluster::heartbeat::heartbeat(&mut conn, liveness.process_id).await;
            if let Err(e) = state.catalogue.reload(&mut conn).await {
                tracing::warn!(error = %e, "the model catalogue's stored entries could not be read");
            }
            let _ = state.catalogue.adopt_breakers(&mut conn).await;
        }
        if state.settings.auth.secret_key.is_none() {
            tracing::warn!(
                "auth.secret_key (AGENTCHAT_SECRET_KEY) is unset: provider keys added through \
                 the admin API are stored in clear; set one (`openssl rand -base64 32`), then \
                 run `agentchat secrets rotate` to seal those already stored"
            );
        }
        liveness.spawn(state.pool.clone());
        channel::spawn_listener(
            state.settings.database.url.expose().to_owned(),
            Arc::new(crate::turn::Listeners {
                turns: state.turns.clone(),
                mcp: state.mcp.clone(),
                pool: state.pool.clone(),
                catalogue: state.catalogue.clone(),
            }),
        );
        state.engine.spawn_sweepers();
        crate::knowledge::jobs::spawn_workers(state.knowledge.clone());
        let server = run(listener, state.clone())?;
        db::sweeper::spawn(
            state.pool.clone(),
            clock,
            state.settings.database.hold_sweep_interval,
        );
        tracing::info!(port, "listening");
        Ok(Self {
            port,
            server,
            state,
            liveness,
        })
    }

    /// The port actually bound (useful with port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Shared state, for tests and admin commands.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// What the start banner shows of this built server, with what the caller found out.
    pub fn start_facts(
        &self,
        has_users: Option<bool>,
        unknown_env: Vec<(String, Option<&'static str>)>,
        program: String,
    ) -> crate::banner::StartFacts {
        let state = &self.state;
        crate::banner::start_facts(
            &state.settings,
            &state.knowledge.availability,
            &state.catalogue.now(),
            self.port,
            has_users,
            unknown_env,
            program,
        )
    }

    /// Serves until the process is told to stop (SIGINT / SIGTERM), then drains: running
    /// turns get the shutdown grace period to finish; those still running are stopped, each
    /// storing what it has as `incomplete` (reason `shutdown`) and ending its stream.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let turns = self.state.turns.clone();
        let grace = self.state.settings.durable.shutdown_grace;
        let handle = self.server.handle();
        let watcher = tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!(
                running = turns.len(),
                "shutting down; draining running turns"
            );
            // No new connections from here on; open streams keep going.
            let stopping = tokio::spawn(handle.stop(true));
            let drained = tokio::time::Instant::now() + grace;
            while !turns.is_empty() && tokio::time::Instant::now() < drained {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if !turns.is_empty() {
                tracing::warn!(
                    running = turns.len(),
                    "grace period over; stopping running turns"
                );
                turns.stop_all(StopReason::Shutdown);
            }
            let _ = stopping.await;
        });
        let result = self.server.await;
        watcher.abort();
        self.liveness.retire(&self.state.pool).await;
        result
    }
}

/// The listening socket, with the configured backlog: `TcpListener::bind` asks for 128,
/// which a burst of thousands of connections overflows (actix's own `backlog` applies only
/// to sockets it binds itself). Listening again on a listening socket only resizes its queue.
fn listen(settings: &Settings) -> anyhow::Result<TcpListener> {
    let listener =
        TcpListener::bind(&settings.bind).with_context(|| format!("binding {}", settings.bind))?;
    let backlog = i32::try_from(settings.listen_backlog).unwrap_or(i32::MAX);
    socket2::SockRef::from(&listener)
        .listen(backlog)
        .context("setting the listen backlog")?;
    let cap = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if let Some(cap) = cap.filter(|&cap| cap < backlog) {
        tracing::info!(
            backlog,
            somaxconn = cap,
            "the kernel caps the listen backlog at net.core.somaxconn"
        );
    }
    Ok(listener)
}

fn run(listener: TcpListener, state: AppState) -> anyhow::Result<Server> {
    let metrics = state.metrics.clone();
    let state_grace_secs = state.settings.durable.shutdown_grace.as_secs();
    let head_timeout = state.settings.request_head_timeout;
    let data = web::Data::new(state);
    let server = HttpServer::new(move || {
        let metrics = metrics.clone();
        App::new()
            .app_data(data.clone())
            .app_data(
                web::PathConfig::default()
                    .error_handler(|_, _| ApiError::not_found("resource").into()),
            )
            .app_data(web::QueryConfig::default().error_handler(|e, _| {
                ApiError::bad_request("invalid_query", format!("invalid query string: {e}")).into()
            }))
            .wrap(
                middleware::DefaultHeaders::new()
                    .add(("X-Content-Type-Options", "nosniff"))
                    .add(("Referrer-Policy", "no-referrer")),
            )
            // Before the routes' `/api` scope, which would take the path: the document
            // lists the routes, so it is served from here rather than from among them.
            .configure(crate::openapi::configure)
            .configure(routes::configure)
            .default_service(web::to(not_found))
            .wrap(middleware::from_fn(
                crate::security::text_guard::refuse_nul_queries,
            ))
            .wrap(middleware::from_fn(move |req, next| {
                crate::observe::observe(metrics.clone(), req, next)
            }))
    })
    // Streamed tokens are small writes: without TCP_NODELAY the first one waits for the
    // client's delayed ACK (~40 ms, measured by the load kit).
    .tcp_nodelay(true)
    .client_request_timeout(head_timeout)
    .listen(listener)?
    // Longer than the turns' shutdown grace: a stopped turn still stores and says so.
    .shutdown_timeout(state_grace_secs + 30)
    .disable_signals()
    .run();
    Ok(server)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found("route"))
}
