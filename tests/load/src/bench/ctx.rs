//! What every phase shares: the context (`Ctx`, the conversation pool), logging, and small
//! probes of the server and the fake upstream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Config;
use crate::client::Api;
use crate::fake::Directive;

pub(crate) fn log(msg: impl AsRef<str>) {
    eprintln!("[load] {}", msg.as_ref());
}

#[derive(Clone)]
pub(crate) struct Conv {
    pub(crate) user: usize,
    pub(crate) id: String,
}

/// Everything a phase needs.
pub(crate) struct Ctx {
    pub(crate) cfg: Config,
    pub(crate) api: Api,
    pub(crate) direct_http: reqwest::Client,
    pub(crate) fake_base: String,
    /// The kit's MCP server, and the kit's own session to it (the MCP baseline).
    pub(crate) mcp_base: String,
    pub(crate) mcp_direct: Option<crate::mcp::DirectSession>,
    pub(crate) tokens: Arc<Vec<String>>,
    /// One personal API key per user (same order as `tokens`), for `/v1` turns.
    pub(crate) keys: Arc<Vec<String>>,
    pub(crate) pool: Arc<Mutex<std::collections::VecDeque<Conv>>>,
    pub(crate) server_pid: u32,
    pub(crate) db: String,
}

impl Ctx {
    pub(crate) fn take(&self) -> Option<Conv> {
        self.pool.lock().ok()?.pop_front()
    }
    pub(crate) fn give(pool: &Arc<Mutex<std::collections::VecDeque<Conv>>>, c: Conv) {
        if let Ok(mut p) = pool.lock() {
            p.push_back(c);
        }
    }
    pub(crate) fn plain(&self) -> Directive {
        Directive {
            ttft_ms: self.cfg.ttft_ms,
            n: self.cfg.deltas,
            gap_ms: self.cfg.gap_ms,
            ..Default::default()
        }
    }
    pub(super) fn turn_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
}

pub(crate) fn fd_count(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(|d| d.count())
}

/// Streams the fake upstream is serving now.
pub(crate) async fn upstream_active(ctx: &Ctx) -> Option<u64> {
    let v: serde_json::Value = ctx
        .direct_http
        .get(format!("{}/control/stats", ctx.fake_base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    v.get("active").and_then(serde_json::Value::as_u64)
}

pub(crate) async fn release(ctx: &Ctx) {
    let _ = ctx
        .direct_http
        .post(format!("{}/control/release", ctx.fake_base))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
}
