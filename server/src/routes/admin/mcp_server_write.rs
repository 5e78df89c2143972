//! An admin's change to a stored MCP server as one [`AdminWrite`]: the row and its trail
//! row together, then this process's manager and the other processes told.

use async_trait::async_trait;
use diesel_async::AsyncPgConnection;
use serde_json::{json, Value};

use crate::auth::AuthUser;
use crate::cluster::channel;
use crate::db::models::admin_change::{AdminWrite, NewChange};
use crate::db::models::mcp_server;
use crate::state::AppState;
use crate::tools::mcp::{McpServerConfig, Source};

/// What is done to the server.
pub(super) enum Op {
    /// Inserted; refused (output `false`) when the name is taken.
    Create(McpServerConfig),
    /// Replaced from `before` (its current definition); `false` when it is gone.
    Update {
        before: McpServerConfig,
        config: McpServerConfig,
    },
    /// Deleted; `before` is what it was.
    Delete(McpServerConfig),
}

pub(super) struct McpServerWrite<'a> {
    pub state: &'a AppState,
    pub who: &'a AuthUser,
    pub op: Op,
}

impl McpServerWrite<'_> {
    fn name(&self) -> &str {
        match &self.op {
            Op::Create(c) | Op::Update { config: c, .. } | Op::Delete(c) => &c.name,
        }
    }
}

#[async_trait]
impl AdminWrite for McpServerWrite<'_> {
    /// Whether the row was written (a delete always counts, as before).
    type Output = bool;
    type Error = diesel::result::Error;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<bool, Self::Error> {
        use crate::tools::mcp::stored::row_of;
        match &self.op {
            Op::Create(c) => mcp_server::insert(conn, &row_of(c)).await,
            Op::Update { config, .. } => mcp_server::update(conn, &row_of(config)).await,
            Op::Delete(c) => mcp_server::delete(conn, &c.name).await.map(|_| true),
        }
    }

    fn trail(&self, written: &bool) -> Option<NewChange> {
        if !written {
            return None;
        }
        let by = |kind| NewChange::by(self.who, kind, self.name());
        Some(match &self.op {
            Op::Create(c) => by("mcp_server.create").after(audit_view(c)),
            Op::Update { before, config } => {
                let mut after = audit_view(config);
                if before.headers != config.headers {
                    // Header values never enter the trail; that they changed does.
                    after["header_values_changed"] = json!(true);
                }
                by("mcp_server.update")
                    .before(audit_view(before))
                    .after(after)
            }
            Op::Delete(c) => by("mcp_server.delete").before(audit_view(c)),
        })
    }

    async fn notify(&self, conn: &mut AsyncPgConnection, written: &bool) {
        if !written {
            return;
        }
        match &self.op {
            Op::Create(c) | Op::Update { config: c, .. } => {
                self.state.mcp.upsert(c.clone(), Source::Api)
            }
            Op::Delete(c) => {
                self.state.mcp.remove(&c.name);
            }
        }
        tell_other_processes(conn).await;
    }
}

/// A server's settings as the admin audit trail keeps them: header names, never values.
fn audit_view(c: &McpServerConfig) -> Value {
    json!({
        "name": c.name, "url": c.url, "headers": c.headers.keys().collect::<Vec<_>>(),
        "enabled": c.enabled, "timeout_ms": c.timeout_ms, "forward_identity": c.forward_identity,
    })
}

/// The other processes re-read the servers (this one has its change already and keeps its
/// connections: an unchanged definition is left alone). The change is stored: a lost
/// notice is caught up when a process's listener reconnects, so it does not fail the request.
async fn tell_other_processes(conn: &mut AsyncPgConnection) {
    let notice = channel::signal(conn, channel::Signal::McpServersChanged).await;
    if let Err(e) = notice {
        tracing::warn!(error = %e, "could not tell the other processes about an MCP server change");
    }
}
