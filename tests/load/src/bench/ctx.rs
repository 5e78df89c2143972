//! What every phase shares: the context (`Ctx`, the conversation pool), logging, and small
//! probes of the server and the fake upstream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Config;
use crate::client::Api;
use crate::fake::Directive;
use crate::scenarios::Route;

pub(crate) fn log(msg: impl AsRef<str>) {
    eprintln!("[load] {}", msg.as_ref());
}

#[derive(Clone)]
pub(crate) struct Conv {
    pub(crate) user: usize,
    pub(crate) id: String,
}

/// Conversations free for a turn (one turn per conversation at a time).
pub(crate) type Pool = Arc<Mutex<std::collections::VecDeque<Conv>>>;

/// Everything a phase needs.
pub(crate) struct Ctx {
    pub(crate) cfg: Config,
    pub(crate) api: Api,
    pub(crate) direct_http: reqwest::Client,
    pub(crate) fake_base: String,
    /// The second fake upstream (provider `b` of the catalogue scenario).
    pub(crate) fake_b_base: String,
    /// The kit's MCP server, and the kit's own session to it (the MCP baseline).
    pub(crate) mcp_base: String,
    pub(crate) mcp_direct: Option<crate::mcp::DirectSession>,
    pub(crate) tokens: Arc<Vec<String>>,
    /// One personal API key per user (same order as `tokens`), for `/v1` turns.
    pub(crate) keys: Arc<Vec<String>>,
    /// Conversations that name no model (the server's default).
    pub(crate) pool: Pool,
    /// The catalogue scenario's conversations, alternating `fast-a` and `fast-b` (empty
    /// unless that scenario runs).
    pub(crate) catalogue_pool: Pool,
    /// The image scenario's conversations, on the model that reads images (empty unless
    /// that scenario runs), and the photo each user uploaded once ([`crate::image`]).
    pub(crate) image_pool: Pool,
    pub(crate) image: Option<crate::image::Prepared>,
    pub(crate) server_pid: u32,
    /// The fake upstream's process: its CPU per call is the machine's speed ([`super::calibrate`]).
    pub(crate) fake_pid: u32,
    pub(crate) db: String,
}

impl Ctx {
    pub(crate) fn take(&self) -> Option<Conv> {
        self.pool.lock().ok()?.pop_front()
    }
    /// The conversations turns of `route` run on.
    pub(crate) fn pool_for(&self, route: Route) -> &Pool {
        match route {
            Route::Catalogue => &self.catalogue_pool,
            Route::Image => &self.image_pool,
            Route::Native | Route::V1 => &self.pool,
        }
    }
    pub(crate) fn take_for(&self, route: Route) -> Option<Conv> {
        self.pool_for(route).lock().ok()?.pop_front()
    }
    /// The fake upstreams a direct baseline of `route` alternates between: the turns'.
    pub(crate) fn fake_bases_for(&self, route: Route) -> Vec<String> {
        match route {
            Route::Catalogue => vec![self.fake_base.clone(), self.fake_b_base.clone()],
            Route::Native | Route::V1 | Route::Image => vec![self.fake_base.clone()],
        }
    }
    /// The image a direct baseline of `route` sends with its request (the data URL of the
    /// stored photo, for the image scenario), so that "added" is the server's own work.
    pub(crate) fn direct_image_for(&self, route: Route) -> Option<std::sync::Arc<String>> {
        match route {
            Route::Image => self.image.as_ref().map(|i| i.data_url.clone()),
            _ => None,
        }
    }
    pub(crate) fn give(pool: &Pool, c: Conv) {
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

/// The fake upstream's counters (`GET /control/stats`).
pub(crate) async fn upstream_stats(ctx: &Ctx) -> Option<serde_json::Value> {
    ctx.direct_http
        .get(format!("{}/control/stats", ctx.fake_base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()
}

/// Streams the fake upstream is serving now.
pub(crate) async fn upstream_active(ctx: &Ctx) -> Option<u64> {
    upstream_stats(ctx).await?.get("active")?.as_u64()
}

pub(crate) async fn release(ctx: &Ctx) {
    let _ = ctx
        .direct_http
        .post(format!("{}/control/release", ctx.fake_base))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
}
