//! What every handler can reach.

use std::sync::Arc;

use crate::auth::jwt::JwtKeys;
use crate::auth::password::PasswordHasher;
use crate::auth::throttle::LoginThrottle;
use crate::config::Settings;
use crate::db::Pool;
use crate::turn::{RunningTurns, TurnEngine};

/// Shared application state, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: Pool,
    pub jwt: JwtKeys,
    pub hasher: PasswordHasher,
    pub throttle: Arc<LoginThrottle>,
    /// Starts, follows, decides and cancels turns.
    pub engine: TurnEngine,
    /// MCP servers (the admin pages and JWKS read them; turns use their tools).
    pub mcp: crate::tools::mcp::McpManager,
    /// The built-in tools.
    pub tools: crate::tools::Registry,
    /// The budget clock (periods, resets).
    pub clock: crate::budget::Clock,
    /// The model catalogue and the providers' breakers (the admin API edits it).
    pub catalogue: crate::catalogue::Catalogue,
    /// Users' workspace files (shared with the file tools).
    pub workspaces: Arc<crate::files::WorkspaceStore>,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Turns running in this process (for cancel).
    pub turns: RunningTurns,
    /// Bounds uploads buffered at once.
    pub uploads: Arc<crate::security::gate::ConcurrencyGate>,
    /// Full-text searches running at once (`security.max_concurrent_searches`, two per user).
    pub searches: Arc<crate::security::gate::ConcurrencyGate>,
    /// Single sign-on and SCIM.
    pub sso: Arc<crate::auth::oidc::Sso>,
    /// API keys seen lately (`/v1` turns skip their lookup).
    pub keys: Arc<crate::auth::key_cache::KeyCache>,
    /// Document collections, their ingestion jobs and search.
    pub knowledge: Arc<crate::knowledge::Knowledge>,
    /// The rate of readings through shared links, per client address and per link.
    pub share_reads: Arc<crate::sharing::ReadGate>,
    /// The code interpreter's jail, probed once at start (`/readyz` and the admin view show
    /// its isolation; the `run_python` tool runs code through it).
    pub sandbox: Arc<dyn crate::sandbox::Backend>,
    /// Web search providers, their breakers and the roles' site rules.
    pub web_search: Arc<crate::websearch::WebSearch>,
}
