//! MCP (Model Context Protocol) tool servers, as a client built on rmcp.
//!
//! - [`config`]: the server definitions (config file `[[mcp_servers]]`, admin API);
//! - [`connection`]: one session over stdio or Streamable HTTP ([`http_client`] lifts the
//!   per-call identity and trace headers out of `_meta`);
//! - [`manager`]: the servers and the snapshot of offered tools; [`server_state`]: one
//!   server's state; [`supervisor`]: a task per server (reconnect with backoff, tool list
//!   refreshes), which reads lists within [`limits`] (`listing`);
//! - [`tool`]: an MCP tool as a [`crate::tools::Tool`], mapped by [`result`], its image
//!   content kept as workspace files by [`images`];
//! - [`identity`]: the signed per-user tokens and their JWKS;
//! - [`sync`]: admin-API changes reaching every process.

pub mod config;
pub mod connection;
pub mod http_client;
pub mod identity;
pub mod images;
pub mod limits;
mod listing;
pub mod manager;
pub mod result;
pub mod server_state;
pub mod stored;
pub mod supervisor;
pub mod sync;
pub mod tool;

pub use config::{McpServerConfig, TransportKind};
pub use identity::{IdentityContext, IdentitySigner};
pub use limits::McpLimits;
pub use manager::McpManager;
pub use server_state::{ServerShared, Source, State};
