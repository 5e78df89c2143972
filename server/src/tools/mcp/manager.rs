//! All MCP servers of the process and their shared state. A supervisor task per server
//! ([`super::supervisor`]) keeps its session; the tools of the servers that are up are
//! published as a [`Registry`] snapshot, which a turn merges into its own registry, so a
//! server that is down simply has no tools to offer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::config::McpServerConfig;
use super::identity::IdentitySigner;
use super::tool::McpTool;
use crate::db;
use crate::tools::{Registry, ToolContext, ToolError};

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

pub(super) struct Live {
    status: ServerStatus,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<ToolInfo>,
}

/// One server's shared state (read by its tools and the admin API, written by its supervisor).
pub struct ServerShared {
    pub config: McpServerConfig,
    pub source: Source,
    pub(super) live: RwLock<Live>,
    /// Admin refresh or a call that found the session broken.
    pub(super) poke: Notify,
    pub(super) tools_changed: Arc<Notify>,
    /// Bumped after every check, so a refresh can wait for its outcome.
    pub(super) checks: watch::Sender<u64>,
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

    pub(super) fn set(
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
            tokio::spawn(super::supervisor::supervise(self.clone(), shared, stop));
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
    pub(super) fn publish(&self) {
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
