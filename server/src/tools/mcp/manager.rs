//! All MCP servers of the process. A supervisor task per server ([`super::supervisor`])
//! keeps its session and its state ([`super::server_state`]); the tools of the servers that
//! are up are published as a [`Registry`] snapshot, which a turn merges into its own
//! registry, so a server that is down simply has no tools to offer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::config::McpServerConfig;
use super::identity::IdentityContext;
use super::images::ImageKeeper;
use super::limits::McpLimits;
use super::server_state::{Live, ServerShared, Source, State};
use super::tool::McpTool;
use crate::tools::Registry;

struct Running {
    shared: Arc<ServerShared>,
    stop: CancellationToken,
}

struct Inner {
    servers: Mutex<BTreeMap<String, Running>>,
    snapshot: RwLock<Registry>,
    identity: Option<Arc<IdentityContext>>,
    output_cap: usize,
    limits: McpLimits,
    /// Where tools' image content is saved (set once at startup).
    images: OnceLock<ImageKeeper>,
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
    pub fn new(identity: Option<IdentityContext>, output_cap: usize, limits: McpLimits) -> Self {
        // rmcp's HTTP client brings its own rustls without a crypto provider: use ring, as
        // the rest of the process does (a second install is a harmless no-op error).
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::new(BTreeMap::new()),
                snapshot: RwLock::new(Registry::new().with_output_cap(output_cap)),
                identity: identity.map(Arc::new),
                output_cap,
                limits,
                images: OnceLock::new(),
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

    /// Saves the image content of tool results to the callers' workspaces in `store` (so
    /// the chat shows them and a model that reads images sees them); without it images are
    /// only summarised. Set once; the tools already offered are rebuilt to use it.
    pub fn keep_images_in(&self, store: Arc<crate::files::WorkspaceStore>) {
        if self.inner.images.set(ImageKeeper { store }).is_ok() {
            self.publish();
        }
    }

    /// How much of a tool list is read and offered.
    pub fn limits(&self) -> &McpLimits {
        &self.inner.limits
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
            live: RwLock::new(Live::new(initial)),
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

    /// Rebuilds the snapshot of offered tools from the connected servers, in name order,
    /// until `max_offered_bytes` of definitions: a server whose tools do not all fit offers
    /// those that do, and is shown degraded with the reason.
    pub(super) fn publish(&self) {
        let mut registry = Registry::new().with_output_cap(self.inner.output_cap);
        let budget = self.inner.limits.max_offered_bytes;
        let mut used = 0usize;
        for shared in self.servers() {
            if !matches!(shared.status().state, State::Connected | State::Degraded) {
                continue;
            }
            let tools = shared.tools();
            let (mut offered, mut past_budget) = (0, 0);
            for info in &tools {
                let bytes = info.offered_bytes();
                if used + bytes > budget {
                    past_budget += 1;
                    continue;
                }
                let tool = McpTool {
                    full_name: info.name.clone(),
                    remote_name: info.remote_name.clone(),
                    description: info.description.clone(),
                    input_schema: info.parameters.clone(),
                    server: Arc::clone(&shared),
                    identity: self.inner.identity.clone(),
                    images: self.inner.images.get().cloned(),
                };
                match registry.register(Arc::new(tool)) {
                    Ok(()) => {
                        used += bytes;
                        offered += 1;
                    }
                    Err(e) => {
                        tracing::warn!(mcp_server = %shared.config.name, error = %e, "skipping an MCP tool")
                    }
                }
            }
            let note = (past_budget > 0).then(|| {
                format!(
                    "{past_budget} of its {} tools are not offered: all MCP tools together would pass {budget} bytes (tools.mcp.max_offered_bytes)",
                    tools.len()
                )
            });
            shared.set_offered(offered, note);
        }
        if let Ok(mut s) = self.inner.snapshot.write() {
            *s = registry;
        }
    }
}
