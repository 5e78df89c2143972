//! One server's shared state: what its supervisor last found (state, error, the tools and
//! what was left out of them by the listing limits), read by its tools, the admin API and
//! `/metrics`.

use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};

use super::config::McpServerConfig;

/// What is known of a server right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Connecting,
    Connected,
    /// Connected, but offering only part of what it lists: a listing limit
    /// ([`super::limits::McpLimits`]) left tools out; `status.notes` says which and why.
    Degraded,
    Error,
    Disabled,
}

impl State {
    pub const ALL: [State; 5] = [
        State::Connecting,
        State::Connected,
        State::Degraded,
        State::Error,
        State::Disabled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Connected => "connected",
            State::Degraded => "degraded",
            State::Error => "error",
            State::Disabled => "disabled",
        }
    }
}

/// Where a server's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Config,
    Api,
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

impl ToolInfo {
    /// Bytes this tool adds to every model request that offers it (name, description and
    /// parameter schema as serialised).
    pub fn offered_bytes(&self) -> usize {
        self.name.len() + self.description.len() + self.parameters.to_string().len()
    }
}

/// Status of one server, as listed by the admin API.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the listing limits left out (state `degraded`), in words for the admin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub checked_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

pub(super) struct Live {
    pub(super) state: State,
    pub(super) error: Option<String>,
    pub(super) checked_at: DateTime<Utc>,
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) tools: Vec<ToolInfo>,
    /// Left out by the listing (pages, count, sizes).
    pub(super) listing_notes: Vec<String>,
    /// Left out because all servers' tools together were past the offered total.
    pub(super) offer_note: Option<String>,
    /// Of `tools`, how many the published snapshot offers (the rest is past the total).
    pub(super) offered: usize,
}

impl Live {
    pub(super) fn new(state: State) -> Self {
        Self {
            state,
            error: None,
            checked_at: Utc::now(),
            peer: None,
            tools: Vec::new(),
            listing_notes: Vec::new(),
            offer_note: None,
            offered: 0,
        }
    }
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
        self.live.read().ok().and_then(|l| l.error.clone())
    }

    /// A call failed at the transport: have the supervisor check the session now.
    pub fn report_broken(&self) {
        self.poke.notify_one();
    }

    pub fn status(&self) -> ServerStatus {
        let Ok(l) = self.live.read() else {
            return ServerStatus {
                state: State::Error,
                error: Some("state unavailable".into()),
                notes: Vec::new(),
                checked_at: Utc::now(),
                protocol_version: None,
            };
        };
        let mut notes = l.listing_notes.clone();
        notes.extend(l.offer_note.clone());
        let state = match l.state {
            State::Connected if !notes.is_empty() => State::Degraded,
            s => s,
        };
        ServerStatus {
            state,
            error: l.error.clone(),
            notes,
            checked_at: l.checked_at,
            protocol_version: l
                .peer
                .as_ref()
                .and_then(|p| p.peer_info().map(|i| i.protocol_version.to_string())),
        }
    }

    /// The tools the server listed within the listing limits (the admin's view).
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.live
            .read()
            .map(|l| l.tools.clone())
            .unwrap_or_default()
    }

    /// How many of [`Self::tools`] models are offered now.
    pub fn offered(&self) -> usize {
        self.live.read().map(|l| l.offered).unwrap_or(0)
    }

    /// Records a check: a connected session with its listing, or a state without one (no
    /// tools).
    pub(super) fn set(&self, state: State, error: Option<String>, connected: Option<Connected>) {
        if let Ok(mut l) = self.live.write() {
            l.state = state;
            l.error = error;
            l.checked_at = Utc::now();
            match connected {
                Some(c) => {
                    l.peer = Some(c.peer);
                    l.tools = c.tools;
                    l.listing_notes = c.notes;
                }
                None => {
                    l.peer = None;
                    l.tools.clear();
                    l.listing_notes.clear();
                    l.offer_note = None;
                    l.offered = 0;
                }
            }
        }
        self.checks.send_modify(|n| *n += 1);
    }

    /// The manager's verdict on this server's share of the offered total.
    pub(super) fn set_offered(&self, offered: usize, note: Option<String>) {
        if let Ok(mut l) = self.live.write() {
            l.offered = offered;
            l.offer_note = note;
        }
    }
}

/// What a successful listing leaves: the session and the tools within the limits.
pub(super) struct Connected {
    pub(super) peer: Peer<RoleClient>,
    pub(super) tools: Vec<ToolInfo>,
    pub(super) notes: Vec<String>,
}
