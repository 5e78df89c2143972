//! The turn engine: what every turn shares (pool, provider, tools, settings, this
//! process's running turns), its public face (send a message, follow, decide, cancel), and
//! a prepared turn, the unit it runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use uuid::Uuid;

use super::error::TurnError;
use super::sql;
use crate::cluster::channel::{self, Stop};
use crate::db::models::conversation;

use super::turn_log::EventSink;
use crate::budget::Clock;
use crate::config::LlmSettings;
use crate::db;
use crate::db::models::budget::Hold;
use crate::llm::ChatMessage;
use crate::tools::Registry;

use super::approval::sql_step::Claimant;
use super::pending_start::PendingStart;
use super::plan::Plan;
use crate::db::models::custom_tool::CustomToolRow;

/// The turns running in this process, each with its event log.
pub type RunningTurns = crate::cluster::ActiveTurns<EventSink>;

/// Everything a turn needs, shared by all turns.
#[derive(Clone)]
pub struct TurnEngine {
    pub(crate) pool: db::Pool,
    /// Every model users may pick, with the client that serves it.
    pub(crate) catalogue: crate::catalogue::Catalogue,
    /// Each provider's circuit breaker (checked in memory before every model call).
    pub(crate) breakers: Arc<crate::catalogue::Breakers>,
    pub(crate) tools: Registry,
    pub(crate) settings: Arc<LlmSettings>,
    pub(crate) clock: Clock,
    /// Limits and SSRF rules for admin-defined HTTP tools.
    pub(crate) http: crate::tools::HttpToolConfig,
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
    /// Turns running in this process (cancel, shutdown).
    pub(crate) turns: RunningTurns,
    /// This server process (its heartbeat row; its turns' claims and holds name it).
    pub(crate) process_id: Uuid,
    pub(crate) durable: Arc<crate::config::DurableSettings>,
    /// MCP servers; the tools of those that are up join each turn's registry.
    pub(crate) mcp: crate::tools::mcp::McpManager,
    /// The merged registry of the last turn start, reused while its parts are unchanged.
    pub(crate) tool_set: crate::turn::tool_set::ToolSetCache,
    /// The history of conversations whose turns started here, for the next start.
    pub(crate) history: Arc<crate::turn::history_cache::HistoryCache>,
    /// Users' workspace files (a message's attachments are checked against them).
    pub(crate) workspaces: Arc<crate::files::WorkspaceStore>,
}

/// Whose turn it is: what every row and event of it names, and the reservation not yet
/// settled (for release if the turn task panics).
pub(crate) struct Who {
    pub turn_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub conversation_id: Uuid,
    pub user_message_id: Uuid,
    pub outstanding: Arc<Mutex<Option<Hold>>>,
}

/// A turn whose start is durable (user message stored, conversation claimed).
pub(crate) struct PreparedTurn {
    pub who: Who,
    /// What it may do ([`Plan`]); each step's commit renews its role.
    pub plan: Plan,
    pub input: Vec<ChatMessage>,
    /// The first model call's reservation and the output cap it leaves room for.
    pub first_call: (Hold, u32),
    /// The COMMIT of the turn's start, sent alongside the first model call; taken by it.
    pub start: Option<PendingStart>,
    /// Whether the conversation still has its default title when the turn starts: only then
    /// may its answer title it (no read per turn to find out).
    pub wants_title: bool,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Cancelled {
    /// The turn was stopped (here, or seen to let go on another process).
    pub cancelled: bool,
    /// A turn still runs (on a process that has not let go yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// Its process was asked to stop it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<bool>,
}

/// How long a cancel waits to see a turn running on another process let go.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

impl TurnEngine {
    /// Stops the conversation's running turn, whichever process runs it (`user_id` must
    /// own the conversation: 404 otherwise).
    pub async fn cancel(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
    ) -> Result<Cancelled, TurnError> {
        let mut conn = db::conn(&self.pool).await?;
        if conversation::find_owned(&mut conn, conversation_id, user_id)
            .await?
            .is_none()
        {
            return Err(TurnError::NotFound("conversation"));
        }
        let outcome = |cancelled, running, requested| Cancelled {
            cancelled,
            running,
            requested,
        };
        if self.turns.cancel(conversation_id) {
            return Ok(outcome(true, None, None));
        }
        // Not here: ask every process, then watch the claim go (a turn stores what it has
        // and releases the conversation within moments of being told).
        let Some(turn_id) = sql::active_turn(&mut conn, conversation_id).await? else {
            return Ok(outcome(false, Some(false), None));
        };
        channel::broadcast(&mut conn, Stop::Turn(turn_id)).await?;
        drop(conn);
        let started = tokio::time::Instant::now();
        while started.elapsed() < CANCEL_WAIT {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut conn = db::conn(&self.pool).await?;
            if sql::active_turn(&mut conn, conversation_id).await? != Some(turn_id) {
                return Ok(outcome(true, None, None));
            }
        }
        // Told, but not stopped yet (its process may be unreachable; a dead one's turns
        // are ended once its heartbeat is stale).
        Ok(outcome(false, Some(true), Some(true)))
    }

    /// How long a reservation may live before the sweeper frees it: a live turn settles it
    /// before then, even one storing itself after its deadline.
    pub fn hold_ttl(&self) -> Duration {
        self.settings.turn_timeout + super::plan::STORE_GRACE
    }

    /// Who may claim a conversation for a resumed turn: this process.
    pub(crate) fn claimant(&self) -> Claimant {
        Claimant {
            process_id: self.process_id,
            stale_after: self.hold_ttl(),
        }
    }

    /// The built-in tools plus the tools of the MCP servers that are up plus the
    /// admin-defined ones ([`crate::turn::tool_set`]).
    pub(crate) fn registry_with(&self, custom: &[CustomToolRow]) -> Registry {
        self.tool_set
            .get(&self.tools, self.mcp.registry(), custom, &self.http)
    }
}
