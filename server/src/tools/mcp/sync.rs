//! Admin-API changes to MCP servers reach every process: the process that made a change
//! says so on the turns channel (`mcp`, [`crate::cluster::channel::Signal::McpServersChanged`]),
//! and each process makes its servers match the `mcp_servers` table. Servers of the config
//! file are each process's own and never touched here.

use diesel_async::AsyncPgConnection;

use super::manager::McpManager;
use super::server_state::Source;
use crate::db::models::mcp_server;

impl McpManager {
    /// Starts, restarts or stops this process's admin-API servers to match Postgres; a
    /// server whose definition did not change keeps its connection.
    pub async fn sync_from_db(&self, conn: &mut AsyncPgConnection) -> diesel::QueryResult<()> {
        let rows = mcp_server::list(conn).await?;
        for row in &rows {
            let config = super::stored::config_of(row);
            match self.server(&row.name) {
                Some(s) if s.source == Source::Config => {}
                Some(s) if s.config == config => {}
                _ => self.upsert(config, Source::Api),
            }
        }
        for s in self.servers() {
            if s.source == Source::Api && !rows.iter().any(|r| r.name == s.config.name) {
                self.remove(&s.config.name);
            }
        }
        Ok(())
    }
}
