//! What the cluster channel's signals do in this process: stop turns, wake followers,
//! re-read the MCP servers and the providers' breakers ([`crate::cluster::channel`]).

use crate::cluster::channel::{Signal, Stop, Subscriber};
use crate::cluster::StopReason;
use crate::tools::mcp::McpManager;

/// What a notification acts on in this process.
#[derive(Clone)]
pub struct Listeners {
    pub turns: super::engine::RunningTurns,
    pub mcp: McpManager,
    pub pool: crate::db::Pool,
    /// The model catalogue and the providers' circuit breakers, which other processes
    /// change too.
    pub catalogue: crate::catalogue::Catalogue,
}

/// Acts on what a notification says, for this process's turns, followers and MCP servers.
fn apply(to: &Listeners, signal: Signal) {
    let turns = &to.turns;
    match signal {
        Signal::Stop(Stop::Turn(id)) => {
            turns.cancel_turn(id);
        }
        Signal::Stop(Stop::User(id)) => turns.stop_user(id, StopReason::Revoked),
        Signal::Follow(id) => {
            if let Some(log) = turns.log_of(id) {
                log.followed_remotely();
            }
        }
        Signal::Changed(id) => turns.remote.changed(id),
        Signal::McpServersChanged => {
            let (mcp, pool) = (to.mcp.clone(), to.pool.clone());
            tokio::spawn(async move { sync_mcp(&mcp, &pool).await });
        }
        Signal::BreakersChanged => {
            to.catalogue.spawn_adopt_breakers(to.pool.clone());
        }
        Signal::CatalogueChanged => to.catalogue.spawn_reload(to.pool.clone()),
    }
}

/// Re-reads the admin-API MCP servers (a lost notification is caught up at the next one, or
/// when the listener reconnects).
async fn sync_mcp(mcp: &McpManager, pool: &crate::db::Pool) {
    let synced = match pool.get().await {
        Ok(mut conn) => mcp.sync_from_db(&mut conn).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = synced {
        tracing::warn!(error = %e, "could not re-read the MCP servers after a change");
    }
}

impl Subscriber for Listeners {
    fn on_signal(&self, signal: Signal) {
        apply(self, signal);
    }

    fn reconnected(&self) {
        apply(self, Signal::McpServersChanged);
        apply(self, Signal::CatalogueChanged);
        apply(self, Signal::BreakersChanged);
    }
}
