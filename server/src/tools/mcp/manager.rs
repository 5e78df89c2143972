//! Keeps one session per configured MCP server: a supervisor task per server connects,
//! reads the tool list, re-reads it on `notifications/tools/list_changed` and on an admin's
//! refresh, notices a dead session and reconnects with exponential backoff. The tools of the
//! servers that are up are published as a [`Registry`] snapshot; a turn merges it into its own
//! registry, so a server that is down simply has no tools to offer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rmcp::model::Tool as RemoteTool;
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::config::{McpServerConfig, TransportKind};
use super::connection::{self, Session};
use super::identity::IdentitySigner;
use super::tool::{full_name, McpTool};
use crate::db;
use crate::tools::{Registry, ToolContext, ToolError};

/// First reconnect delay; doubles per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a session is looked at for having closed (a crashed stdio process).
const CLOSED_POLL: Duration = Duration::from_millis(200);
/// Least time given to start a session: a stdio server may be a program that takes seconds
/// to start (a Python interpreter on a busy host), even when its calls must be quick.
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a server's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Config,
    Api,
}

/// What is known of a server right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Connecting,
    Connected,
    Error,
    Disabled,
}

/// A tool as the admin sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    /// `{server}__{tool}`.
    pub name: String,
    /// The server's own name for it.
    pub remote_name: String,
    pub description: String,
    pub annotations: Value,
    pub parameters: Value,
}

/// Status of one server, as listed by the admin API.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub checked_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

struct Live {
    status: ServerStatus,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<ToolInfo>,
}

/// One server's shared state (read by its tools and the admin API, written by its supervisor).
pub struct ServerShared {
    pub config: McpServerConfig,
    pub source: Source,
    live: RwLock<Live>,
    /// Admin refresh or a call that found the session broken.
    poke: Notify,
    tools_changed: Arc<Notify>,
    /// Bumped after every check, so a refresh can wait for its outcome.
    checks: watch::Sender<u64>,
}

impl ServerShared {
    /// The live session's peer, when connected.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.live.read().ok().and_then(|l| l.peer.clone())
    }

    pub fn last_error(&self) -> Option<String> {
        self.live.read().ok().and_then(|l| l.status.error.clone())
    }

    /// A call failed at the transport: have the supervisor check the session now.
    pub fn report_broken(&self) {
        self.poke.notify_one();
    }

    pub fn status(&self) -> ServerStatus {
        match self.live.read() {
            Ok(l) => l.status.clone(),
            Err(_) => ServerStatus {
                state: State::Error,
                error: Some("state unavailable".into()),
                checked_at: Utc::now(),
                protocol_version: None,
            },
        }
    }

    pub fn tools(&self) -> Vec<ToolInfo> {
        self.live
            .read()
            .map(|l| l.tools.clone())
            .unwrap_or_default()
    }

    fn set(
        &self,
        state: State,
        error: Option<String>,
        peer: Option<Peer<RoleClient>>,
        tools: Option<Vec<ToolInfo>>,
    ) {
        let protocol_version = peer
            .as_ref()
            .and_then(|p| p.peer_info().map(|i| i.protocol_version.to_string()));
        if let Ok(mut l) = self.live.write() {
            l.status = ServerStatus {
                state,
                error,
                checked_at: Utc::now(),
                protocol_version,
            };
            l.peer = peer;
            match tools {
                Some(t) => l.tools = t,
                None if state != State::Connected => l.tools.clear(),
                None => {}
            }
        }
        self.checks.send_modify(|n| *n += 1);
    }
}

/// What identity forwarding needs: the signing key and the database for the user's role.
pub struct IdentityContext {
    pub signer: IdentitySigner,
    pub pool: db::Pool,
}

impl IdentityContext {
    /// A fresh token for the calling user (their role as it is now).
    pub async fn token_for(&self, ctx: &ToolContext, audience: &str) -> Result<String, ToolError> {
        let unavailable = |_| ToolError::Failed("could not look up the caller's role".to_owned());
        let mut conn = db::conn(&self.pool)
            .await
            .map_err(|_| ToolError::Failed("could not look up the caller's role".to_owned()))?;
        let account = db::models::user::find(&mut conn, ctx.user_id)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| ToolError::NotPermitted("the account no longer exists".to_owned()))?;
        self.signer
            .sign(ctx.user_id, &ctx.username, &account.role, audience)
            .map_err(ToolError::Failed)
    }
}

struct Running {
    shared: Arc<ServerShared>,
    stop: CancellationToken,
}

struct Inner {
    servers: Mutex<BTreeMap<String, Running>>,
    snapshot: RwLock<Registry>,
    identity: Option<Arc<IdentityContext>>,
    output_cap: usize,
}

/// All MCP servers of this process. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.names())
            .finish()
    }
}

impl McpManager {
    /// A manager with no servers yet; `output_cap` as for built-in tools.
    pub fn new(identity: Option<IdentityContext>, output_cap: usize) -> Self {
        // rmcp's HTTP client brings its own rustls without a crypto provider: use ring, as
        // the rest of the process does (a second install is a harmless no-op error).
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::new(BTreeMap::new()),
                snapshot: RwLock::new(Registry::new().with_output_cap(output_cap)),
                identity: identity.map(Arc::new),
                output_cap,
            }),
        }
    }

    /// The tools of the connected servers (a snapshot; later changes are not seen by it).
    pub fn registry(&self) -> Registry {
        self.inner
            .snapshot
            .read()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The public keys of identity tokens (`/.well-known/jwks.json`).
    pub fn jwks(&self) -> Value {
        match &self.inner.identity {
            Some(i) => i.signer.jwks().clone(),
            None => serde_json::json!({"keys": []}),
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Every server, in name order.
    pub fn servers(&self) -> Vec<Arc<ServerShared>> {
        self.lock()
            .values()
            .map(|r| Arc::clone(&r.shared))
            .collect()
    }

    pub fn server(&self, name: &str) -> Option<Arc<ServerShared>> {
        self.lock().get(name).map(|r| Arc::clone(&r.shared))
    }

    /// Starts (or restarts, when the name exists) the server `config`.
    pub fn upsert(&self, config: McpServerConfig, source: Source) {
        let (checks, _) = watch::channel(0);
        let initial = if config.enabled {
            State::Connecting
        } else {
            State::Disabled
        };
        let shared = Arc::new(ServerShared {
            config,
            source,
            live: RwLock::new(Live {
                status: ServerStatus {
                    state: initial,
                    error: None,
                    checked_at: Utc::now(),
                    protocol_version: None,
                },
                peer: None,
                tools: Vec::new(),
            }),
            poke: Notify::new(),
            tools_changed: Arc::new(Notify::new()),
            checks,
        });
        let stop = CancellationToken::new();
        let previous = self.lock().insert(
            shared.config.name.clone(),
            Running {
                shared: Arc::clone(&shared),
                stop: stop.clone(),
            },
        );
        if let Some(old) = previous {
            old.stop.cancel();
        }
        self.publish();
        if shared.config.enabled {
            tokio::spawn(supervise(self.clone(), shared, stop));
        }
    }

    /// Stops and forgets the server `name`; whether it existed.
    pub fn remove(&self, name: &str) -> bool {
        let removed = self.lock().remove(name);
        let existed = removed.is_some();
        if let Some(r) = removed {
            r.stop.cancel();
        }
        self.publish();
        existed
    }

    /// Re-reads the server's tool list (reconnecting if it is down) and waits, up to its
    /// timeout, for the outcome. `false` when there is no such server.
    pub async fn refresh(&self, name: &str) -> bool {
        let Some(shared) = self.server(name) else {
            return false;
        };
        if !shared.config.enabled {
            return true;
        }
        let mut checks = shared.checks.subscribe();
        checks.mark_unchanged();
        shared.poke.notify_one();
        let wait = shared.config.timeout() + Duration::from_secs(1);
        let _ = tokio::time::timeout(wait, checks.changed()).await;
        true
    }

    /// Stops every supervisor (their sessions close, stdio children are killed).
    pub fn shutdown(&self) {
        for r in self.lock().values() {
            r.stop.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        match self.inner.servers.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Rebuilds the snapshot of offered tools from the connected servers.
    fn publish(&self) {
        let mut registry = Registry::new().with_output_cap(self.inner.output_cap);
        for shared in self.servers() {
            if shared.status().state != State::Connected {
                continue;
            }
            for info in shared.tools() {
                let tool = McpTool {
                    full_name: info.name.clone(),
                    remote_name: info.remote_name.clone(),
                    description: info.description.clone(),
                    input_schema: info.parameters.clone(),
                    server: Arc::clone(&shared),
                    identity: self.inner.identity.clone(),
                };
                if let Err(e) = registry.register(Arc::new(tool)) {
                    tracing::warn!(mcp_server = %shared.config.name, error = %e, "skipping an MCP tool");
                }
            }
        }
        if let Ok(mut s) = self.inner.snapshot.write() {
            *s = registry;
        }
    }
}

/// The kind of transport, for listings.
pub fn transport_of(config: &McpServerConfig) -> TransportKind {
    config.transport()
}

/// Connect, list, watch, reconnect: until `stop`.
async fn supervise(manager: McpManager, shared: Arc<ServerShared>, stop: CancellationToken) {
    let name = shared.config.name.clone();
    let mut failures: u32 = 0;
    loop {
        let connect_within = shared.config.timeout().max(MIN_CONNECT_TIMEOUT);
        let attempt = tokio::time::timeout(
            connect_within,
            connection::connect(
                &shared.config,
                Arc::clone(&shared.tools_changed),
                stop.child_token(),
            ),
        );
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = attempt => r,
        };
        let error = match outcome {
            Ok(Ok(session)) => {
                let error = watch_session(&manager, &shared, session, &stop).await;
                match error {
                    None => return, // stopped
                    Some(e) => {
                        failures = 0;
                        e
                    }
                }
            }
            Ok(Err(e)) => e,
            Err(_) => format!(
                "no answer within {} ms while connecting",
                shared.config.timeout_ms
            ),
        };
        if stop.is_cancelled() {
            return;
        }
        failures = failures.saturating_add(1);
        tracing::warn!(mcp_server = %name, error = %error, failures, "MCP server unavailable");
        shared.set(State::Error, Some(error), None, None);
        manager.publish();
        let delay = FIRST_BACKOFF
            .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(10)))
            .min(MAX_BACKOFF);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
            _ = shared.poke.notified() => {}
        }
    }
}

/// Lists tools, then re-lists on notifications and pokes until the session breaks (the
/// error) or `stop` (`None`).
async fn watch_session(
    manager: &McpManager,
    shared: &Arc<ServerShared>,
    mut session: Session,
    stop: &CancellationToken,
) -> Option<String> {
    let mut poll = tokio::time::interval(CLOSED_POLL);
    let mut relist = true;
    let listener = subscribe_to_tool_changes(
        &session,
        Arc::clone(&shared.tools_changed),
        shared.config.timeout(),
    )
    .await;
    let _stop_listener = listener.map(AbortOnDrop);
    loop {
        if relist {
            relist = false;
            let listed =
                tokio::time::timeout(shared.config.timeout(), session.peer().list_all_tools())
                    .await;
            match listed {
                Ok(Ok(tools)) => {
                    let infos = tool_infos(&shared.config.name, tools);
                    tracing::info!(mcp_server = %shared.config.name, tools = infos.len(), "MCP server connected");
                    shared.set(
                        State::Connected,
                        None,
                        Some(session.peer().clone()),
                        Some(infos),
                    );
                    manager.publish();
                }
                Ok(Err(e)) => {
                    let _ = session.close().await;
                    return Some(format!("listing tools failed: {e}"));
                }
                Err(_) => {
                    let _ = session.close().await;
                    return Some(format!(
                        "listing tools took longer than {} ms",
                        shared.config.timeout_ms
                    ));
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => {
                let _ = session.close().await;
                return None;
            }
            _ = shared.tools_changed.notified() => relist = true,
            _ = shared.poke.notified() => relist = true,
            _ = poll.tick() => {
                if session.is_closed() || session.peer().is_transport_closed() {
                    return Some("the connection to the MCP server closed".to_owned());
                }
            }
        }
    }
}

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Stateless (2026-07-28) sessions deliver `tools/list_changed` only to a
/// `subscriptions/listen` stream: open one and forward what it says. Legacy sessions send the
/// notification unasked (it reaches [`connection::Handler`]).
async fn subscribe_to_tool_changes(
    session: &Session,
    tools_changed: Arc<Notify>,
    timeout: Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    let peer = session.peer();
    let modern = peer
        .peer_info()
        .is_some_and(|i| !i.protocol_version.has_initialize());
    if !modern {
        return None;
    }
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .build();
    match tokio::time::timeout(timeout, peer.listen(filter)).await {
        Err(_) => None,
        Ok(Ok(mut subscription)) => Some(tokio::spawn(async move {
            while let Ok(Some(_)) = subscription.next().await {
                tools_changed.notify_one();
            }
        })),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the MCP server refused a tool-change subscription");
            None
        }
    }
}

/// Our view of the server's tools; names that cannot be `{server}__{tool}` are skipped.
fn tool_infos(server: &str, tools: Vec<RemoteTool>) -> Vec<ToolInfo> {
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        let Some(name) = full_name(server, &t.name) else {
            tracing::warn!(mcp_server = %server, tool = %crate::tools::truncate_chars(&t.name, 80),
                "skipping an MCP tool whose name cannot be offered");
            continue;
        };
        let annotations = t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok())
            .unwrap_or_else(|| Value::Object(Default::default()));
        let description = t
            .description
            .as_deref()
            .or(t.title.as_deref())
            .unwrap_or("")
            .to_owned();
        out.push(ToolInfo {
            name,
            remote_name: t.name.to_string(),
            description,
            annotations,
            parameters: Value::Object((*t.input_schema).clone()),
        });
    }
    out
}
