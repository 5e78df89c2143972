//! Building the reqwest clients (one per thread) and checking base URLs.

use super::retry::error_chain;
use super::*;
use crate::llm::LlmError;
use crate::shard::{self, Sharded};

/// Idle upstream connections kept per host, over all shards (the load kit measured ~50 KiB
/// of server memory per pooled connection after 5,000 streams closed).
const IDLE_CONNECTIONS_PER_HOST: usize = 128;

/// The reqwest clients of a provider, one per thread ([`crate::shard`]): a keep-alive
/// connection is driven on the thread that opened it, which is then the only one using it.
pub fn build_clients(settings: &HttpSettings) -> Result<Sharded<reqwest::Client>, LlmError> {
    let idle = shard::split(IDLE_CONNECTIONS_PER_HOST, shard::count());
    Sharded::build(idle.len(), |i| build_client(settings, idle[i]))
}

/// One reqwest client (connect timeout, keep-alive pool of `idle_per_host`).
fn build_client(
    settings: &HttpSettings,
    idle_per_host: usize,
) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        // Enough warm connections for a burst of turns; without a cap every stream that was
        // ever open at once stays pooled (buffers and a descriptor each) for the idle timeout.
        .pool_max_idle_per_host(idle_per_host)
        .tcp_keepalive(Duration::from_secs(30))
        .user_agent(concat!("AgentChat/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {}", error_chain(&e))))
}

/// Trims trailing slashes from a base URL and checks that it parses.
pub fn normalize_base_url(base_url: &str) -> Result<String, LlmError> {
    let trimmed = base_url.trim().trim_end_matches('/').to_string();
    reqwest::Url::parse(&trimmed).map_err(|e| {
        let shown = crate::domain::shown_url(&trimmed);
        LlmError::Config(format!("invalid base URL {shown:?}: {e}"))
    })?;
    Ok(trimmed)
}
