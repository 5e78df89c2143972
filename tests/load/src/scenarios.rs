//! The scenario registry, and the MCP side of a phase.
//!
//! A scenario is a kind of turn, run through the same closed-model sweep and open-model
//! phase as every other, with a direct baseline sampled concurrently. To add one: a
//! [`ScenarioDef`] here (a key for `--scenarios`, a name for the report, the fake upstream's
//! directive), plus whatever baseline it needs beside the upstream one.

use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::bench::Ctx;
use crate::client::Outcome;
use crate::fake::Directive;
use crate::mcp::{self, EndpointStats};
use crate::stats::{count_errors, sub, Dist};

/// One kind of turn.
pub struct ScenarioDef {
    /// `--scenarios` key.
    pub key: &'static str,
    /// Report name.
    pub name: &'static str,
    /// The fake upstream's directive, from the plain one (`--ttft-ms`, `--deltas`, `--gap-ms`).
    pub directive: fn(Directive) -> Directive,
    /// Which of the server's routes runs the turns.
    pub route: Route,
}

/// How a turn reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Route {
    /// `POST /api/conversations/{id}/messages` with an access token, on a kept conversation.
    #[default]
    Native,
    /// `POST /v1/chat/completions` (streamed) with the user's personal API key: every call
    /// is stored as a new conversation.
    V1,
    /// As `Native`, on the kit's catalogue conversations: each created with a `model` of the
    /// server's catalogue, alternately `fast-a` (provider `a`, the first fake upstream) and
    /// `fast-b` (provider `b`, the second), so the server routes turns to both providers
    /// ([`crate::catalogue`]).
    Catalogue,
    /// As `Native`, on the kit's image conversations (model [`crate::image::MODEL`], which
    /// reads images), every message attaching the photo its user uploaded once
    /// ([`crate::image`]).
    Image,
}

/// Every scenario, in report order.
pub const SCENARIOS: &[ScenarioDef] = &[
    ScenarioDef {
        key: "plain",
        name: "plain chat",
        directive: |d| d,
        route: Route::Native,
    },
    ScenarioDef {
        key: "tool",
        name: "chat with one tool call",
        directive: |d| Directive { tool: true, ..d },
        route: Route::Native,
    },
    ScenarioDef {
        key: "mcp",
        name: "chat with one MCP tool call",
        directive: |d| Directive {
            tool: true,
            mcp: true,
            ..d
        },
        route: Route::Native,
    },
    ScenarioDef {
        key: "v1",
        name: V1_NAME,
        directive: |d| d,
        route: Route::V1,
    },
    ScenarioDef {
        key: crate::image::KEY,
        name: crate::image::NAME,
        directive: |d| d,
        route: Route::Image,
    },
    ScenarioDef {
        key: crate::catalogue::KEY,
        name: crate::catalogue::NAME,
        directive: |d| d,
        route: Route::Catalogue,
    },
];

/// The report name of the `/v1/chat/completions` scenario (plain chat through that route).
pub const V1_NAME: &str = "OpenAI-compatible /v1/chat/completions (plain chat, API key)";

/// The scenarios named in `keys` (all when empty), in registry order.
pub fn select(keys: &[String]) -> anyhow::Result<Vec<&'static ScenarioDef>> {
    for k in keys {
        anyhow::ensure!(
            SCENARIOS.iter().any(|s| s.key == k),
            "unknown scenario {k} (known: {})",
            SCENARIOS
                .iter()
                .map(|s| s.key)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(SCENARIOS
        .iter()
        .filter(|s| keys.is_empty() || keys.iter().any(|k| k == s.key))
        .collect())
}

/// What one phase's MCP calls cost.
///
/// **Added per MCP call** = p50 of `tool_call` → `tool_result` as the load generator sees
/// them on the turn's event stream (the server sends `tool_call` just before it runs the
/// tool and `tool_result` once the MCP answer is mapped; in between: the allowlist check,
/// argument validation, the span, the `tools/call` POST on AgentChat's kept session, the
/// result mapping and output cap, and the event's way to the client) − p50 of a `tools/call`
/// round trip on the kit's own persistent session to the same MCP server, sampled at the
/// direct rate during the same phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct McpPhase {
    pub tool_call: Dist,
    pub direct_call: Dist,
    pub added_p50_ms: Option<f64>,
    pub added_p95_ms: Option<f64>,
    /// `tools/call` requests and newly accepted TCP connections at the MCP server during the
    /// phase, through AgentChat and from the kit's direct session.
    pub calls: u64,
    pub connections: u64,
    pub direct_calls: u64,
    pub direct_connections: u64,
    pub direct_errors: std::collections::BTreeMap<String, u64>,
}

/// The MCP baseline and counters of a running phase.
pub struct McpWatch {
    before: Option<(EndpointStats, EndpointStats)>,
    direct: JoinHandle<Vec<Result<u64, String>>>,
}

impl McpWatch {
    /// Starts the direct baseline; `None` when the kit runs no MCP server.
    pub async fn start(ctx: &Ctx, until: Instant) -> Option<Self> {
        let session = ctx.mcp_direct.clone()?;
        let before = mcp::stats(&ctx.direct_http, &ctx.mcp_base).await;
        let rate = ctx.cfg.direct_rate;
        let direct = tokio::spawn(async move {
            let mut handles = Vec::new();
            if rate > 0.0 {
                let start = Instant::now();
                let step = Duration::from_secs_f64(1.0 / rate);
                for i in 0..100_000u32 {
                    let at = start + step * i;
                    if at >= until {
                        break;
                    }
                    tokio::time::sleep_until(at).await;
                    let s = session.clone();
                    handles.push(tokio::spawn(async move { s.call("load").await }));
                }
            }
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.unwrap_or_else(|_| Err("join".into())));
            }
            out
        });
        Some(Self { before, direct })
    }

    pub async fn finish(self, ctx: &Ctx, outs: &[Outcome]) -> McpPhase {
        let direct = self.direct.await.unwrap_or_default();
        let after = mcp::stats(&ctx.direct_http, &ctx.mcp_base).await;
        let mut m = McpPhase {
            tool_call: Dist::of(outs.iter().filter_map(|o| o.tool_us).collect()),
            direct_call: Dist::of(
                direct
                    .iter()
                    .filter_map(|r| r.as_ref().ok().copied())
                    .collect(),
            ),
            direct_errors: count_errors(
                direct
                    .iter()
                    .map(|r| r.as_ref().err().cloned())
                    .collect::<Vec<_>>()
                    .iter(),
            ),
            ..Default::default()
        };
        m.added_p50_ms = sub(m.tool_call.p50_ms, m.direct_call.p50_ms);
        m.added_p95_ms = sub(m.tool_call.p95_ms, m.direct_call.p95_ms);
        if let (Some((a0, d0)), Some((a1, d1))) = (self.before, after) {
            m.calls = a1.calls.saturating_sub(a0.calls);
            m.connections = a1.connections.saturating_sub(a0.connections);
            m.direct_calls = d1.calls.saturating_sub(d0.calls);
            m.direct_connections = d1.connections.saturating_sub(d0.connections);
        }
        m
    }
}
