//! The orchestrator: processes, setup, scenarios, measurements.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::{self, Api, Outcome};
use crate::fake::Directive;
use crate::scenarios::Route;
use crate::stats::{count_errors, Dist};
use crate::sys;

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub smoke: bool,
    pub out_dir: PathBuf,
    pub server_bin: PathBuf,
    pub results_md: Option<PathBuf>,
    pub users: usize,
    pub levels: Vec<usize>,
    pub step_secs: f64,
    pub open_secs: f64,
    /// Fixed open-model rate instead of half of saturation (same-rate before/after runs).
    pub open_rate: Option<f64>,
    pub streams: Vec<usize>,
    pub stream_cycles: usize,
    pub p99_bound_ms: f64,
    pub ttft_ms: u64,
    pub deltas: u32,
    pub gap_ms: u64,
    pub stats_wait_secs: u64,
    pub direct_rate: f64,
    /// Earlier messages (1 KiB each) every conversation starts with: long conversations.
    pub history: usize,
    pub pg_host: String,
    pub pg_port: String,
    pub command: String,
    /// `--scenarios` keys ([`crate::scenarios::SCENARIOS`]); empty: all.
    pub scenarios: Vec<String>,
    /// Turn starts fired at one instant in the burst phase (0: no burst).
    pub burst: usize,
    /// `--soak S`: instead of the benchmark, `soak_streams` streams for S seconds.
    pub soak_secs: Option<u64>,
    pub soak_streams: usize,
    /// `--soak-rotate N`: a soak worker moves to a new conversation every N turns (0: never).
    pub soak_rotate: u64,
    /// `--held N`: instead of the benchmark, hold N streams open at once with the server's
    /// demo model in slow mode (no upstream socket per stream; see `held.rs`).
    pub held: usize,
    pub held_rate: f64,
    /// `--demo-delay-ms`: the demo model's wait before each word in the held run.
    pub demo_delay_ms: u64,
}

fn list(v: &str) -> anyhow::Result<Vec<usize>> {
    v.split(',')
        .map(|x| x.trim().parse::<usize>().context("bad list"))
        .collect()
}

impl Config {
    pub fn from_args(args: &[String]) -> anyhow::Result<Self> {
        let smoke = args.iter().any(|a| a == "--smoke");
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = here.join("../..");
        let server_bin = std::env::var_os("AGENTCHAT_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let rel = root.join("target/release/agentchat");
                if rel.exists() {
                    rel
                } else {
                    root.join("target/debug/agentchat")
                }
            });
        let mut c = Config {
            smoke,
            out_dir: here.join(if smoke { "out/smoke" } else { "out/full" }),
            server_bin,
            results_md: None,
            users: if smoke { 3 } else { 20 },
            levels: if smoke {
                vec![4]
            } else {
                vec![8, 32, 48, 64, 96, 128, 256]
            },
            step_secs: if smoke { 2.0 } else { 8.0 },
            open_secs: if smoke { 2.0 } else { 10.0 },
            open_rate: None,
            streams: if smoke {
                vec![20, 50]
            } else {
                vec![1000, 5000]
            },
            stream_cycles: if smoke { 1 } else { 2 },
            p99_bound_ms: 100.0,
            ttft_ms: 20,
            deltas: 20,
            gap_ms: 5,
            stats_wait_secs: if smoke { 0 } else { 11 },
            direct_rate: if smoke { 10.0 } else { 20.0 },
            history: 0,
            pg_host: "127.0.0.1".into(),
            pg_port: "5432".into(),
            command: String::new(),
            scenarios: Vec::new(),
            burst: if smoke { 200 } else { 10_000 },
            soak_secs: None,
            soak_streams: 200,
            soak_rotate: 10,
            held: 0,
            held_rate: 500.0,
            demo_delay_ms: 2000,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut val = || it.next().cloned().context(format!("{a} needs a value"));
            match a.as_str() {
                "--smoke" => {}
                "--out" => c.out_dir = val()?.into(),
                "--server-bin" => c.server_bin = val()?.into(),
                "--results-md" => c.results_md = Some(val()?.into()),
                "--users" => c.users = val()?.parse()?,
                "--levels" => c.levels = list(&val()?)?,
                "--step-secs" => c.step_secs = val()?.parse()?,
                "--open-secs" => c.open_secs = val()?.parse()?,
                "--open-rate" => c.open_rate = Some(val()?.parse()?),
                "--streams" => c.streams = list(&val()?)?,
                "--stream-cycles" => c.stream_cycles = val()?.parse()?,
                "--p99-bound-ms" => c.p99_bound_ms = val()?.parse()?,
                "--ttft-ms" => c.ttft_ms = val()?.parse()?,
                "--deltas" => c.deltas = val()?.parse()?,
                "--gap-ms" => c.gap_ms = val()?.parse()?,
                "--stats-wait-secs" => c.stats_wait_secs = val()?.parse()?,
                "--direct-rate" => c.direct_rate = val()?.parse()?,
                "--history" => c.history = val()?.parse()?,
                "--command" => c.command = val()?,
                "--scenarios" => {
                    c.scenarios = val()?.split(',').map(|k| k.trim().to_owned()).collect()
                }
                "--burst" => c.burst = val()?.parse()?,
                "--soak" => c.soak_secs = Some(val()?.parse()?),
                "--soak-streams" => c.soak_streams = val()?.parse()?,
                "--soak-rotate" => c.soak_rotate = val()?.parse()?,
                "--held" => c.held = val()?.parse()?,
                "--held-rate" => c.held_rate = val()?.parse()?,
                "--demo-delay-ms" => c.demo_delay_ms = val()?.parse()?,
                other => bail!("unknown option {other}"),
            }
        }
        c.users = c.users.clamp(1, 1000);
        c.streams.sort_unstable();
        anyhow::ensure!(
            c.streams.iter().all(|n| *n <= 20_000),
            "at most 20000 open streams"
        );
        anyhow::ensure!(
            c.levels.iter().all(|n| *n >= 1 && *n <= 2000),
            "levels must be 1..=2000"
        );
        anyhow::ensure!(
            c.step_secs <= 600.0 && c.open_secs <= 600.0,
            "phases are at most 600 s"
        );
        c.stream_cycles = c.stream_cycles.clamp(1, 5);
        anyhow::ensure!(c.history <= 10_000, "at most 10000 history messages");
        crate::scenarios::select(&c.scenarios)?;
        anyhow::ensure!(c.burst <= 20_000, "at most 20000 starts in a burst");
        anyhow::ensure!(
            c.soak_secs.is_none_or(|s| (1..=86_400).contains(&s)),
            "a soak lasts 1 s to a day"
        );
        anyhow::ensure!(
            (1..=5000).contains(&c.soak_streams),
            "--soak-streams must be 1..=5000"
        );
        anyhow::ensure!(c.held <= 20_000, "at most 20000 held streams");
        anyhow::ensure!(
            (1.0..=10_000.0).contains(&c.held_rate),
            "--held-rate must be 1..=10000 starts/s"
        );
        anyhow::ensure!(
            (1..=5000).contains(&c.demo_delay_ms),
            "--demo-delay-ms must be 1..=5000 (the server's range)"
        );
        anyhow::ensure!(
            c.held == 0 || c.soak_secs.is_none(),
            "--held and --soak are separate runs"
        );
        Ok(c)
    }
}

/// Child processes and the database, torn down on drop whatever happens.
struct Procs {
    fake: Option<Child>,
    mcp: Option<Child>,
    server: Option<Child>,
    db: String,
    pg_host: String,
    pg_port: String,
    db_created: bool,
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in [self.server.take(), self.fake.take(), self.mcp.take()]
            .into_iter()
            .flatten()
        {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.db_created {
            let r = sys::psql(
                &self.pg_host,
                &self.pg_port,
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db),
            );
            if let Err(e) = r {
                eprintln!("warning: could not drop {}: {e:#}", self.db);
            }
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Alternating user and assistant messages of 1 KiB, oldest first, in every conversation,
/// each with the context-window cost the server stores with a message it writes (4 tokens
/// of overhead plus a token per 4 characters; `history_cost_floor` in the server).
fn history_sql(per_conversation: usize) -> String {
    format!(
        "INSERT INTO messages (id, conversation_id, role, content, history_cost) \
         SELECT gen_random_uuid(), c.id, \
                CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, \
                left(repeat('earlier turn ' || g || ' of a long conversation. ', 40), 1024), \
                4 + 1024 / 4 \
         FROM conversations c, generate_series(1, {per_conversation}) g ORDER BY c.id, g"
    )
}

fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos & 0xffff_ffff, std::process::id())
}

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
    fn turn_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
}

/// Counters sampled around a phase.
struct Sample {
    at: Instant,
    server_ticks: u64,
    pg: sys::PgCpu,
    xact: Option<u64>,
    xid: Option<u64>,
}

fn sample(ctx: &Ctx, with_pg_counters: bool) -> Sample {
    Sample {
        at: Instant::now(),
        server_ticks: sys::cpu_ticks(ctx.server_pid).unwrap_or(0),
        pg: sys::pg_cpu(&ctx.db),
        xact: with_pg_counters
            .then(|| sys::xact_commit(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db))
            .flatten(),
        xid: with_pg_counters
            .then(|| sys::next_xid(&ctx.cfg.pg_host, &ctx.cfg.pg_port))
            .flatten(),
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Phase {
    pub scenario: String,
    pub model: String,
    pub concurrency: Option<usize>,
    pub rate_per_s: Option<f64>,
    pub secs: f64,
    pub turns: usize,
    pub ok: usize,
    pub errors: BTreeMap<String, u64>,
    pub throughput_per_s: f64,
    pub ttft: Dist,
    pub gap: Dist,
    pub turn_total: Dist,
    pub direct_ttft: Dist,
    pub direct_gap: Dist,
    pub direct_errors: BTreeMap<String, u64>,
    pub added_ttft_p50_ms: Option<f64>,
    pub added_ttft_p95_ms: Option<f64>,
    pub added_ttft_p99_ms: Option<f64>,
    pub added_gap_p99_ms: Option<f64>,
    pub server_cpu_ms_per_turn: Option<f64>,
    pub server_cpu_util_pct: Option<f64>,
    pub pg_backend_cpu_ms_per_turn: Option<f64>,
    pub pg_all_cpu_ms_per_turn: Option<f64>,
    pub xact_commits_per_turn: Option<f64>,
    pub writing_xids_per_turn: Option<f64>,
    pub server_rss_mib_after: Option<f64>,
    /// MCP scenario: the MCP call through the server against the direct session.
    pub mcp: Option<crate::scenarios::McpPhase>,
}

fn finish_phase(
    ctx: &Ctx,
    mut p: Phase,
    outs: &[Outcome],
    direct: &[Outcome],
    before: &Sample,
    after: &Sample,
    window_end: Instant,
) -> Phase {
    p.turns = outs.len();
    p.ok = outs.iter().filter(|o| o.ok).count();
    p.errors = count_errors(outs.iter().map(|o| &o.error));
    p.secs = (after.at - before.at).as_secs_f64();
    let window = (window_end - before.at).as_secs_f64().max(0.001);
    p.throughput_per_s = p.ok as f64 / window;
    p.ttft = Dist::of(outs.iter().filter_map(|o| o.ttft_us).collect());
    p.gap = Dist::of(
        outs.iter()
            .flat_map(|o| o.gaps_us.iter().copied())
            .collect(),
    );
    p.turn_total = Dist::of(outs.iter().filter(|o| o.ok).map(|o| o.total_us).collect());
    p.direct_ttft = Dist::of(direct.iter().filter_map(|o| o.ttft_us).collect());
    p.direct_gap = Dist::of(
        direct
            .iter()
            .flat_map(|o| o.gaps_us.iter().copied())
            .collect(),
    );
    p.direct_errors = count_errors(direct.iter().map(|o| &o.error));
    p.added_ttft_p50_ms = crate::stats::sub(p.ttft.p50_ms, p.direct_ttft.p50_ms);
    p.added_ttft_p95_ms = crate::stats::sub(p.ttft.p95_ms, p.direct_ttft.p95_ms);
    p.added_ttft_p99_ms = crate::stats::sub(p.ttft.p99_ms, p.direct_ttft.p99_ms);
    p.added_gap_p99_ms = crate::stats::sub(p.gap.p99_ms, p.direct_gap.p99_ms);
    let n = p.turns.max(1) as f64;
    let server_ms =
        after.server_ticks.saturating_sub(before.server_ticks) as f64 * 1000.0 / sys::CLK_TCK;
    let (pg_db_ms, pg_all_ms) = after.pg.since(&before.pg);
    if p.turns > 0 {
        p.server_cpu_ms_per_turn = Some(server_ms / n);
        p.pg_backend_cpu_ms_per_turn = Some(pg_db_ms / n);
        p.pg_all_cpu_ms_per_turn = Some(pg_all_ms / n);
        if let (Some(a), Some(b)) = (after.xact, before.xact) {
            p.xact_commits_per_turn = Some(a.saturating_sub(b) as f64 / n);
        }
        if let (Some(a), Some(b)) = (after.xid, before.xid) {
            p.writing_xids_per_turn = Some(a.saturating_sub(b) as f64 / n);
        }
    }
    p.server_cpu_util_pct = Some(server_ms / 10.0 / p.secs.max(0.001));
    p.server_rss_mib_after = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
    let _ = ctx;
    p
}

/// Fires direct requests at the fake upstream at `rate`/s until `stop` (the baseline measured
/// under the same machine load as the phase).
fn spawn_direct(ctx: &Ctx, d: Directive, rate: f64, until: Instant) -> JoinHandle<Vec<Outcome>> {
    let http = ctx.direct_http.clone();
    let base = ctx.fake_base.clone();
    let content = format!("baseline {}", d.render());
    tokio::spawn(async move {
        let mut handles = Vec::new();
        if rate <= 0.0 {
            return Vec::new();
        }
        let start = Instant::now();
        let step = Duration::from_secs_f64(1.0 / rate);
        for i in 0..100_000u32 {
            let at = start + step * i;
            if at >= until {
                break;
            }
            tokio::time::sleep_until(at).await;
            let (http, base, content) = (http.clone(), base.clone(), content.clone());
            handles.push(tokio::spawn(async move {
                client::direct_turn(&http, &base, &content, d.tool, at, Duration::from_secs(60))
                    .await
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            if let Ok(o) = h.await {
                out.push(o);
            }
        }
        out
    })
}

/// Closed model: `conc` workers, each running turns back to back for `secs`.
async fn closed(
    ctx: &Arc<Ctx>,
    scenario: &str,
    route: Route,
    d: Directive,
    conc: usize,
    secs: f64,
) -> Phase {
    let before = sample(ctx, false);
    let deadline = before.at + Duration::from_secs_f64(secs);
    let direct = spawn_direct(ctx, d, ctx.cfg.direct_rate, deadline);
    let mcp = match d.mcp {
        true => crate::scenarios::McpWatch::start(ctx, deadline).await,
        false => None,
    };
    let content = format!("hello {}", d.render());
    let mut workers = Vec::new();
    for _ in 0..conc {
        let ctx = ctx.clone();
        let content = content.clone();
        workers.push(tokio::spawn(async move {
            let mut outs = Vec::new();
            while Instant::now() < deadline {
                let Some(conv) = ctx.take() else {
                    outs.push(Outcome {
                        error: Some("no_free_conversation".into()),
                        ..Default::default()
                    });
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let t0 = Instant::now();
                let o = ctx
                    .run_turn(route, &conv, &content, t0, ctx.turn_timeout(), None)
                    .await;
                Ctx::give(&ctx.pool, conv);
                let failed = !o.ok;
                outs.push(o);
                if failed {
                    // Do not spin on a failing server.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            outs
        }));
    }
    let mut outs = Vec::new();
    for w in workers {
        if let Ok(v) = w.await {
            outs.extend(v);
        }
    }
    let direct = direct.await.unwrap_or_default();
    let after = sample(ctx, false);
    let mcp = match mcp {
        Some(w) => Some(w.finish(ctx, &outs).await),
        None => None,
    };
    let p = Phase {
        scenario: scenario.into(),
        model: "closed".into(),
        concurrency: Some(conc),
        mcp,
        ..Default::default()
    };
    finish_phase(ctx, p, &outs, &direct, &before, &after, deadline)
}

/// Open model: arrivals at a constant `rate` for `secs`; latency counts from the scheduled
/// arrival, so queueing in the generator or server is not hidden.
async fn open(
    ctx: &Arc<Ctx>,
    scenario: &str,
    route: Route,
    d: Directive,
    rate: f64,
    secs: f64,
    pg_counters: bool,
) -> Phase {
    if pg_counters && ctx.cfg.stats_wait_secs > 0 {
        log(format!(
            "  waiting {} s for Postgres stats to flush",
            ctx.cfg.stats_wait_secs
        ));
        tokio::time::sleep(Duration::from_secs(ctx.cfg.stats_wait_secs)).await;
    }
    let before = sample(ctx, pg_counters);
    let deadline = before.at + Duration::from_secs_f64(secs);
    let direct = spawn_direct(ctx, d, ctx.cfg.direct_rate, deadline);
    let mcp = match d.mcp {
        true => crate::scenarios::McpWatch::start(ctx, deadline).await,
        false => None,
    };
    let content = format!("hello {}", d.render());
    let rate = rate.max(0.5);
    let step = Duration::from_secs_f64(1.0 / rate);
    let mut handles = Vec::new();
    let mut dropped = Vec::new();
    for i in 0..1_000_000u32 {
        let at = before.at + step * i;
        if at >= deadline {
            break;
        }
        tokio::time::sleep_until(at).await;
        let Some(conv) = ctx.take() else {
            dropped.push(Outcome {
                error: Some("no_free_conversation".into()),
                ..Default::default()
            });
            continue;
        };
        let ctx2 = ctx.clone();
        let content = content.clone();
        handles.push(tokio::spawn(async move {
            let o = ctx2
                .run_turn(route, &conv, &content, at, ctx2.turn_timeout(), None)
                .await;
            Ctx::give(&ctx2.pool, conv);
            o
        }));
    }
    let mut outs = dropped;
    for h in handles {
        if let Ok(o) = h.await {
            outs.push(o);
        }
    }
    let direct = direct.await.unwrap_or_default();
    // CPU and duration over the working window; Postgres counters after the flush wait.
    let mut after = sample(ctx, false);
    if pg_counters {
        if ctx.cfg.stats_wait_secs > 0 {
            tokio::time::sleep(Duration::from_secs(ctx.cfg.stats_wait_secs)).await;
        }
        after.xact = sys::xact_commit(&ctx.cfg.pg_host, &ctx.cfg.pg_port, &ctx.db);
        after.xid = sys::next_xid(&ctx.cfg.pg_host, &ctx.cfg.pg_port);
    }
    let mcp = match mcp {
        Some(w) => Some(w.finish(ctx, &outs).await),
        None => None,
    };
    let p = Phase {
        scenario: scenario.into(),
        model: "open".into(),
        rate_per_s: Some(rate),
        mcp,
        ..Default::default()
    };
    let mut p = finish_phase(ctx, p, &outs, &direct, &before, &after, deadline);
    p.turns = outs
        .iter()
        .filter(|o| o.error.as_deref() != Some("no_free_conversation"))
        .count();
    p
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub sweep: Vec<Phase>,
    pub saturation_per_s: Option<f64>,
    pub saturation_level: Option<usize>,
    pub max_throughput_per_s: f64,
    pub bound_note: String,
    pub half: Option<Phase>,
}

async fn scenario(ctx: &Arc<Ctx>, name: &str, route: Route, d: Directive) -> ScenarioResult {
    let mut r = ScenarioResult {
        name: name.into(),
        ..Default::default()
    };
    for &c in &ctx.cfg.levels {
        log(format!(
            "{name}: closed model, concurrency {c}, {} s",
            ctx.cfg.step_secs
        ));
        let p = closed(ctx, name, route, d, c, ctx.cfg.step_secs).await;
        log(format!(
            "  {:.0} turns/s ok={} errors={:?} ttft p50={} p99={} ms, server cpu {} ms/turn",
            p.throughput_per_s,
            p.ok,
            p.errors,
            crate::stats::f(p.ttft.p50_ms, 1),
            crate::stats::f(p.ttft.p99_ms, 1),
            crate::stats::f(p.server_cpu_ms_per_turn, 2)
        ));
        r.max_throughput_per_s = r.max_throughput_per_s.max(p.throughput_per_s);
        let within = p.ttft.p99_ms.is_some_and(|x| x <= ctx.cfg.p99_bound_ms)
            && p.errors.values().sum::<u64>() as f64 <= 0.01 * p.turns.max(1) as f64;
        if within && p.throughput_per_s > r.saturation_per_s.unwrap_or(0.0) {
            r.saturation_per_s = Some(p.throughput_per_s);
            r.saturation_level = Some(c);
        }
        r.sweep.push(p);
    }
    r.bound_note = format!(
        "saturation = best closed-model throughput whose TTFT p99 ≤ {} ms and errors ≤ 1 %",
        ctx.cfg.p99_bound_ms
    );
    let sat = match r.saturation_per_s {
        Some(s) => s,
        None => {
            r.bound_note
                .push_str("; NO level met the bound, half-load uses half the best throughput");
            r.max_throughput_per_s
        }
    };
    if r.saturation_level == ctx.cfg.levels.iter().max().copied() {
        r.bound_note.push_str(
            "; the highest concurrency level was still within the bound (may be under-estimated)",
        );
    }
    let (half, why) = match ctx.cfg.open_rate {
        Some(r) => (r, "fixed by --open-rate"),
        None => ((sat / 2.0).max(1.0), "half of saturation"),
    };
    log(format!(
        "{name}: open model at {half:.0}/s ({why}), {} s",
        ctx.cfg.open_secs
    ));
    let p = open(ctx, name, route, d, half, ctx.cfg.open_secs, true).await;
    log(format!(
        "  ok={} errors={:?} added ttft p50={} p99={} ms, added gap p99={} ms, commits/turn={}",
        p.ok,
        p.errors,
        crate::stats::f(p.added_ttft_p50_ms, 2),
        crate::stats::f(p.added_ttft_p99_ms, 2),
        crate::stats::f(p.added_gap_p99_ms, 2),
        crate::stats::f(p.xact_commits_per_turn, 2)
    ));
    r.half = Some(p);
    r
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamPoint {
    pub cycle: usize,
    pub open_streams: usize,
    pub reached: usize,
    pub server_rss_mib: Option<f64>,
    pub server_fds: Option<usize>,
    pub seconds_to_open: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamsResult {
    pub idle_rss_mib: Option<f64>,
    pub idle_fds: Option<usize>,
    pub points: Vec<StreamPoint>,
    /// Sampled once the streams' connections have closed and after 2 s of light traffic.
    pub after_close_rss_mib: Vec<Option<f64>>,
    pub after_close_fds: Vec<Option<usize>>,
    pub completed: usize,
    pub errors: BTreeMap<String, u64>,
    pub mib_per_1000: Option<f64>,
    pub growth_after_close_mib: Option<f64>,
    pub after_close_minus_idle_mib: Option<f64>,
}

/// Waits until the streams' connections are really gone, then serves a little ordinary
/// traffic, and answers the server's descriptor count. A turn that has ended leaves its HTTP
/// connection open in the generator's keep-alive pool for a few seconds (4 s idle timeout),
/// and each open connection holds the server's buffers: sampling RSS before they close
/// measured the connections, not the streams. The traffic matters too: the allocator gives
/// freed pages back to the OS on its next allocations, not while the process sleeps, so a
/// server that keeps serving is what "after close" means.
async fn settle_after_close(
    ctx: &Arc<Ctx>,
    idle_fds: Option<usize>,
    errors: &mut BTreeMap<String, u64>,
) -> Option<usize> {
    let closed_by = Instant::now() + Duration::from_secs(20);
    // Slack for pooled upstream and database connections opened or dropped meanwhile.
    let settled = |fds: Option<usize>| match (fds, idle_fds) {
        (Some(now), Some(idle)) => now <= idle + 16,
        _ => true,
    };
    while !settled(fd_count(ctx.server_pid)) && Instant::now() < closed_by {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let light = Directive {
        ttft_ms: 5,
        n: 5,
        gap_ms: 5,
        ..Default::default()
    };
    let traffic = closed(ctx, "after close", Route::Native, light, 4, 2.0).await;
    for (e, n) in traffic.errors {
        *errors.entry(format!("after close: {e}")).or_insert(0) += n;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    fd_count(ctx.server_pid)
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

/// Opens turns whose upstream holds the stream open, up to each target, then releases them.
async fn streams(ctx: &Arc<Ctx>) -> StreamsResult {
    let mut r = StreamsResult::default();
    tokio::time::sleep(Duration::from_secs(2)).await;
    r.idle_rss_mib = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
    r.idle_fds = fd_count(ctx.server_pid);
    let hold = Directive {
        ttft_ms: 5,
        n: 1,
        gap_ms: 5000,
        hold_s: 600,
        ..Default::default()
    };
    let content = format!("hold {}", hold.render());
    let max_target = ctx.cfg.streams.last().copied().unwrap_or(0);
    for cycle in 0..ctx.cfg.stream_cycles {
        let opened = Arc::new(AtomicU64::new(0));
        let mut handles: Vec<JoinHandle<Outcome>> = Vec::new();
        let mut launched = 0usize;
        for &target in &ctx.cfg.streams {
            log(format!(
                "streams: cycle {} opening up to {target}",
                cycle + 1
            ));
            let t0 = Instant::now();
            let limit = t0 + Duration::from_secs(180);
            while launched < target && Instant::now() < limit {
                // At most 128 turns starting at once.
                if launched as u64 >= opened.load(Ordering::Relaxed) + 128 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let Some(conv) = ctx.take() else {
                    r.errors
                        .entry("no_free_conversation".into())
                        .and_modify(|c| *c += 1)
                        .or_insert(1);
                    break;
                };
                let (ctx2, content, opened2) = (ctx.clone(), content.clone(), opened.clone());
                handles.push(tokio::spawn(async move {
                    let o = ctx2
                        .api
                        .turn(
                            &ctx2.tokens[conv.user],
                            &conv.id,
                            &content,
                            Instant::now(),
                            Duration::from_secs(900),
                            Some(opened2),
                        )
                        .await;
                    Ctx::give(&ctx2.pool, conv);
                    o
                }));
                launched += 1;
            }
            // Wait until every launched turn streams (or finished early), bounded.
            while (opened.load(Ordering::Relaxed) as usize) < launched
                && handles.iter().filter(|h| !h.is_finished()).count() > 0
                && Instant::now() < limit
            {
                let finished = handles.iter().filter(|h| h.is_finished()).count();
                if opened.load(Ordering::Relaxed) as usize + finished >= launched {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let secs = t0.elapsed().as_secs_f64();
            tokio::time::sleep(Duration::from_secs(2)).await;
            let point = StreamPoint {
                cycle: cycle + 1,
                open_streams: target,
                reached: opened.load(Ordering::Relaxed) as usize,
                server_rss_mib: sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0),
                server_fds: fd_count(ctx.server_pid),
                seconds_to_open: secs,
            };
            log(format!(
                "  {} streaming, server RSS {} MiB, fds {:?}",
                point.reached,
                crate::stats::f(point.server_rss_mib, 1),
                point.server_fds
            ));
            r.points.push(point);
        }
        release(ctx).await;
        let mut done = 0;
        let join_by = Instant::now() + Duration::from_secs(180);
        for h in handles {
            match tokio::time::timeout_at(join_by, h).await {
                Ok(Ok(o)) => {
                    if o.ok {
                        done += 1;
                    } else if let Some(e) = o.error {
                        *r.errors.entry(e).or_insert(0) += 1;
                    }
                }
                _ => *r.errors.entry("join_timeout".into()).or_insert(0) += 1,
            }
        }
        r.completed += done;
        let fds = settle_after_close(ctx, r.idle_fds, &mut r.errors).await;
        let after = sys::rss_kib(ctx.server_pid).map(|k| k as f64 / 1024.0);
        log(format!(
            "  released; {done} completed; server RSS after close {} MiB, fds {fds:?}",
            crate::stats::f(after, 1)
        ));
        r.after_close_rss_mib.push(after);
        r.after_close_fds.push(fds);
    }
    let top = r
        .points
        .iter()
        .filter(|p| p.cycle == 1 && p.open_streams == max_target)
        .filter_map(|p| p.server_rss_mib)
        .next();
    if let (Some(top), Some(idle)) = (top, r.idle_rss_mib) {
        if max_target > 0 {
            r.mib_per_1000 = Some((top - idle) / (max_target as f64 / 1000.0));
        }
    }
    if let (Some(Some(first)), Some(Some(last))) =
        (r.after_close_rss_mib.first(), r.after_close_rss_mib.last())
    {
        r.growth_after_close_mib = Some(last - first);
        if let Some(idle) = r.idle_rss_mib {
            r.after_close_minus_idle_mib = Some(last - idle);
        }
    }
    r
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CommitProbe {
    /// Tool turns (one `calculator` step, then the held text) rather than plain ones.
    pub tool: bool,
    pub route: Route,
    pub turns: usize,
    pub reached_first_token: usize,
    pub completed: usize,
    pub xact_before_first_token: Option<f64>,
    pub xact_after_first_token: Option<f64>,
    /// Commits per second with no turns running (subtracted from the two above).
    pub background_commits_per_sec: f64,
    /// The same two without the subtraction.
    pub xact_raw_before_first_token: Option<f64>,
    pub xact_raw_after_first_token: Option<f64>,
    pub xid_before_first_token: Option<f64>,
    pub xid_after_first_token: Option<f64>,
    pub reliable: bool,
}

/// Commits per turn before the first token and after it, with held streams so the two halves
/// are separated in time (each read waits for Postgres to flush its counters).
/// The server's own background work also commits: the kit slows the hold sweeper (30 s by
/// default) to once a day, and the same window length with no turns is measured first and
/// subtracted for anything else. With `tool`, the first model call answers a tool call and
/// the second one holds: "before the first token" is then everything up to the first text
/// token, the tool step's commit included.
async fn commit_probe(ctx: &Arc<Ctx>, tool: bool, route: Route) -> CommitProbe {
    let k = 20usize;
    let wait = Duration::from_secs(ctx.cfg.stats_wait_secs);
    let (h, p) = (ctx.cfg.pg_host.clone(), ctx.cfg.pg_port.clone());
    tokio::time::sleep(wait).await;
    let idle_start = Instant::now();
    let cb = sys::xact_commit(&h, &p, &ctx.db);
    tokio::time::sleep(wait).await;
    let c0 = sys::xact_commit(&h, &p, &ctx.db);
    let idle_per_sec = match (cb, c0) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / idle_start.elapsed().as_secs_f64(),
        _ => 0.0,
    };
    let window1 = Instant::now();
    let x0 = sys::next_xid(&h, &p);
    let hold = Directive {
        ttft_ms: 5,
        n: 1,
        gap_ms: 60_000,
        hold_s: 300,
        tool,
        ..Default::default()
    };
    let content = format!("probe {}", hold.render());
    let opened = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..k {
        let Some(conv) = ctx.take() else { break };
        let (ctx2, content, o2) = (ctx.clone(), content.clone(), opened.clone());
        handles.push(tokio::spawn(async move {
            let o = ctx2
                .run_turn(
                    route,
                    &conv,
                    &content,
                    Instant::now(),
                    Duration::from_secs(400),
                    Some(o2),
                )
                .await;
            Ctx::give(&ctx2.pool, conv);
            o
        }));
    }
    let limit = Instant::now() + Duration::from_secs(30);
    // `opened` counts the first tool call of a tool turn: those are holding once the fake
    // upstream has as many streams open as there are turns (their second calls).
    let holding = || async {
        !tool
            || upstream_active(ctx)
                .await
                .is_some_and(|a| a >= handles.len() as u64)
    };
    while ((opened.load(Ordering::Relaxed) as usize) < handles.len() || !holding().await)
        && Instant::now() < limit
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let reached = opened.load(Ordering::Relaxed) as usize;
    tokio::time::sleep(wait).await;
    let c1 = sys::xact_commit(&h, &p, &ctx.db);
    let x1 = sys::next_xid(&h, &p);
    let window1 = window1.elapsed().as_secs_f64();
    let window2 = Instant::now();
    release(ctx).await;
    let mut completed = 0;
    for hd in handles {
        if let Ok(Ok(o)) = tokio::time::timeout(Duration::from_secs(60), hd).await {
            completed += o.ok as usize;
        }
    }
    tokio::time::sleep(wait).await;
    let c2 = sys::xact_commit(&h, &p, &ctx.db);
    let x2 = sys::next_xid(&h, &p);
    let window2 = window2.elapsed().as_secs_f64();
    let per = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / k as f64);
    let net = |a: Option<u64>, b: Option<u64>, secs: f64| {
        Some(((b?.saturating_sub(a?) as f64 - idle_per_sec * secs) / k as f64).max(0.0))
    };
    CommitProbe {
        tool,
        route,
        turns: k,
        reached_first_token: reached,
        completed,
        xact_before_first_token: net(c0, c1, window1),
        xact_after_first_token: net(c1, c2, window2),
        background_commits_per_sec: idle_per_sec,
        xact_raw_before_first_token: per(c0, c1),
        xact_raw_after_first_token: per(c1, c2),
        xid_before_first_token: per(x0, x1),
        xid_after_first_token: per(x1, x2),
        reliable: ctx.cfg.stats_wait_secs >= 11,
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_mib: u64,
    pub loadavg_start: String,
    pub loadavg_end: String,
    pub kernel: String,
    pub postgres_version: String,
    pub server_bin: String,
    pub open_files_limit: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub config: Option<Config>,
    pub machine: Machine,
    pub started_at_unix: u64,
    pub wall_secs: f64,
    pub setup_secs: f64,
    /// Whether Postgres was checkpointed before the measured phases, or why not.
    pub checkpoint_before: String,
    pub scenarios: Vec<ScenarioResult>,
    pub streams: Option<StreamsResult>,
    pub commit_probe: Option<CommitProbe>,
    /// The same probe over tool turns (one tool step).
    pub commit_probe_tool: Option<CommitProbe>,
    /// Both probes again through `/v1/chat/completions`.
    pub commit_probe_v1: Option<CommitProbe>,
    pub commit_probe_v1_tool: Option<CommitProbe>,
    pub burst: Option<crate::burst::BurstResult>,
    pub soak: Option<crate::soak::SoakResult>,
    pub held: Option<crate::held::HeldResult>,
    pub mcp_server_cpu_ms: Option<f64>,
    pub fake_upstream_cpu_ms: Option<f64>,
    pub generator_cpu_ms: Option<f64>,
    pub kit_ok: bool,
    pub kit_failures: Vec<String>,
}

/// Starts `agentchat-load <sub>` (a loopback helper that prints `LISTENING <port>`).
async fn spawn_helper(sub: &str) -> anyhow::Result<(Child, u16)> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(&exe)
        .arg(sub)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {sub}"))?;
    let stdout = child.stdout.take().context("helper stdout")?;
    let what = sub.to_owned();
    let port = tokio::task::spawn_blocking(move || -> anyhow::Result<u16> {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        line.trim()
            .strip_prefix("LISTENING ")
            .with_context(|| format!("{what} did not start"))?
            .parse()
            .context("port")
    })
    .await??;
    Ok((child, port))
}

/// Waits (bounded) until the server has a session with the kit's MCP server.
async fn wait_mcp_connected(api: &Api, admin: &str) -> anyhow::Result<()> {
    let by = Instant::now() + Duration::from_secs(30);
    loop {
        let v = api
            .http
            .get(format!("{}/api/admin/mcp-servers", api.base))
            .bearer_auth(admin)
            .timeout(Duration::from_secs(5))
            .send()
            .await?
            .json::<serde_json::Value>()
            .await?;
        let state = v
            .get("items")
            .and_then(|i| i.as_array())
            .and_then(|i| i.iter().find(|s| s["name"] == crate::mcp::SERVER_NAME))
            .map(|s| s["status"]["state"].as_str().unwrap_or("").to_owned());
        if state.as_deref() == Some("connected") {
            return Ok(());
        }
        if Instant::now() > by {
            bail!("the server did not connect to the kit's MCP server: {v}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn run_guarded(cfg: Config) -> anyhow::Result<bool> {
    tokio::select! {
        r = run(cfg) => r,
        _ = tokio::signal::ctrl_c() => {
            log("interrupted; cleaning up");
            // Dropping the run future drops `Procs`, which kills children and drops the DB.
            Ok(false)
        }
    }
}

async fn run(cfg: Config) -> anyhow::Result<bool> {
    let t_start = Instant::now();
    std::fs::create_dir_all(&cfg.out_dir)?;
    let mut report = Report {
        started_at_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        ..Default::default()
    };
    report.machine = Machine {
        nproc: sys::nproc(),
        cpu_model: sys::cpu_model(),
        mem_total_mib: sys::mem_total_mib(),
        loadavg_start: sys::loadavg(),
        loadavg_end: String::new(),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .into(),
        postgres_version: sys::psql(&cfg.pg_host, &cfg.pg_port, "SHOW server_version")
            .unwrap_or_else(|e| format!("? ({e})")),
        server_bin: cfg.server_bin.display().to_string(),
        open_files_limit: std::fs::read_to_string("/proc/self/limits")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .map(|l| {
                l.split_whitespace()
                    .skip(3)
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default(),
    };
    anyhow::ensure!(
        cfg.server_bin.exists(),
        "server binary {} not found (build it, or set AGENTCHAT_BIN)",
        cfg.server_bin.display()
    );

    let db = format!("agentchat_load_{}", rand_suffix());
    let mut procs = Procs {
        fake: None,
        mcp: None,
        server: None,
        db: db.clone(),
        pg_host: cfg.pg_host.clone(),
        pg_port: cfg.pg_port.clone(),
        db_created: false,
    };

    // Fake upstream and MCP server (own processes, so their CPU is not the generator's).
    let (fake, fake_port) = spawn_helper("fake-upstream").await?;
    let fake_pid = fake.id();
    procs.fake = Some(fake);
    let fake_base = format!("http://127.0.0.1:{fake_port}");
    log(format!("fake upstream on {fake_base}"));
    let (mcp_child, mcp_port) = spawn_helper("mcp-server").await?;
    let mcp_pid = mcp_child.id();
    procs.mcp = Some(mcp_child);
    let mcp_base = format!("http://127.0.0.1:{mcp_port}");
    let mcp_servers = serde_json::json!([{
        "name": crate::mcp::SERVER_NAME,
        "url": format!("{mcp_base}/agentchat/mcp"),
        "timeout_ms": 10_000,
    }]);
    log(format!("MCP server on {mcp_base}"));

    // The server, on a fresh database.
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let server_log = std::fs::File::create(cfg.out_dir.join("server.log"))?;
    let server = Command::new(&cfg.server_bin)
        .env(
            "DATABASE_URL",
            format!("postgres://postgres@{}:{}/{db}", cfg.pg_host, cfg.pg_port),
        )
        .env("AGENTCHAT_BIND", format!("127.0.0.1:{port}"))
        .env(
            "AGENTCHAT_LLM_PROVIDER",
            if cfg.held > 0 { "demo" } else { "openai" },
        )
        .env("AGENTCHAT_LLM_BASE_URL", format!("{fake_base}/v1"))
        .env(
            "AGENTCHAT_LLM_MODEL",
            if cfg.held > 0 { "demo" } else { "fake" },
        )
        .env("AGENTCHAT_DEMO_DELAY_MS", cfg.demo_delay_ms.to_string())
        // One model call per turn, as the kit counts them (no background title calls).
        .env("AGENTCHAT_AUTO_TITLES", "false")
        .env(
            "AGENTCHAT_TURN_TIMEOUT_SECS",
            client::TURN_DEADLINE.as_secs().to_string(),
        )
        .env("AGENTCHAT_ACCESS_TOKEN_TTL_SECS", "86400")
        // The hold sweeper commits on every look (30 s by default), landing at random in the
        // commit probe's windows; once a day keeps the counts to the turns' own.
        .env("AGENTCHAT_HOLD_SWEEP_SECS", "86400")
        .env("AGENTCHAT_REGISTRATION", "open")
        .env("AGENTCHAT_MCP_SERVERS", mcp_servers.to_string())
        .env("AGENTCHAT_WORKSPACE_DIR", cfg.out_dir.join("workspaces"))
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(server_log.try_clone()?)
        .stderr(server_log)
        .spawn()
        .with_context(|| format!("starting {}", cfg.server_bin.display()))?;
    let server_pid = server.id();
    procs.server = Some(server);
    procs.db_created = true; // the server creates it; drop it in any case
    let http = client::http_client(20_000)?;
    let api = Api {
        http: http.clone(),
        base: base.clone(),
    };
    let ready_by = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = procs.server.as_mut() {
            if let Ok(Some(status)) = s.try_wait() {
                bail!(
                    "the server exited during start ({status}); see {}",
                    cfg.out_dir.join("server.log").display()
                );
            }
        }
        let ok = http
            .get(format!("{base}/readyz"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .map(|r| r.status().is_success())
            .unwrap_or(false);
        if ok {
            break;
        }
        if Instant::now() > ready_by {
            bail!(
                "the server was not ready within 120 s; see {}",
                cfg.out_dir.join("server.log").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    log(format!(
        "server pid {server_pid} ready on {base}, database {db}"
    ));

    // Users (argon2 is expensive: create and log in once, two at a time) and conversations.
    let password = "load-test-password-1";
    let mut tokens = Vec::new();
    for chunk in (0..cfg.users).collect::<Vec<_>>().chunks(2) {
        let mut hs = Vec::new();
        for &i in chunk {
            let api = api.clone();
            hs.push(tokio::spawn(async move {
                let name = format!("load_user_{i}");
                if i == 0 {
                    // The first account becomes admin: register it alone, first.
                }
                api.register(&name, password).await?;
                api.login(&name, password).await
            }));
            if i == 0 {
                let t = hs.pop().context("join")?.await??;
                tokens.push(t);
            }
        }
        for h in hs {
            tokens.push(h.await??);
        }
    }
    // Budgets on: every turn reserves, settles and releases a hold (large enough never to run out).
    for role in ["admin", "member"] {
        api.set_role_budget(&tokens[0], role, 1_000_000_000_000)
            .await?;
    }
    let convs_needed = cfg
        .streams
        .last()
        .copied()
        .unwrap_or(0)
        .max(cfg.levels.iter().max().copied().unwrap_or(1) * 2)
        .max(cfg.burst)
        .max(cfg.soak_secs.map_or(0, |_| cfg.soak_streams))
        .max(cfg.held)
        + 64;
    let convs_needed = convs_needed.max(256);
    log(format!(
        "{} users logged in; creating {convs_needed} conversations",
        tokens.len()
    ));
    let mut keys = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        keys.push(api.create_key(t, &format!("load kit {i}")).await?);
    }
    let tokens = Arc::new(tokens);
    let mut all = Vec::new();
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut hs = Vec::new();
    for i in 0..convs_needed {
        let (api, tokens, sem) = (api.clone(), tokens.clone(), sem.clone());
        hs.push(tokio::spawn(async move {
            let _p = sem.acquire().await;
            let user = i % tokens.len();
            api.create_conversation(&tokens[user], &format!("load {i}"))
                .await
                .map(|id| Conv { user, id })
        }));
    }
    for h in hs {
        all.push(h.await??);
    }
    if cfg.history > 0 {
        let t = Instant::now();
        sys::psql_in(&cfg.pg_host, &cfg.pg_port, &db, &history_sql(cfg.history))?;
        log(format!(
            "{} earlier messages of 1 KiB added to each of {} conversations in {:.1} s",
            cfg.history,
            all.len(),
            t.elapsed().as_secs_f64()
        ));
    }
    // A checkpoint still writing out earlier work (say, a test suite that just created and
    // dropped a hundred databases) would land in the measured phases: once, a run's p99 at
    // half load read 17 ms where the runs around it read 2–8.
    report.checkpoint_before = match sys::psql(&cfg.pg_host, &cfg.pg_port, "CHECKPOINT") {
        Ok(_) => "done".into(),
        Err(e) => format!("failed ({e})"),
    };
    report.setup_secs = t_start.elapsed().as_secs_f64();
    log(format!(
        "setup done in {:.1} s; checkpoint {}",
        report.setup_secs, report.checkpoint_before
    ));

    let direct_http = client::http_client(1000)?;
    wait_mcp_connected(&api, &tokens[0]).await?;
    let mcp_direct = crate::mcp::DirectSession::open(direct_http.clone(), &mcp_base).await?;
    let ctx = Arc::new(Ctx {
        cfg: cfg.clone(),
        api,
        direct_http,
        fake_base: fake_base.clone(),
        mcp_base,
        mcp_direct: Some(mcp_direct),
        tokens,
        keys: Arc::new(keys),
        pool: Arc::new(Mutex::new(all.into_iter().collect())),
        server_pid,
        db: db.clone(),
    });
    let gen_ticks0 = sys::cpu_ticks(std::process::id()).unwrap_or(0);
    let fake_ticks0 = sys::cpu_ticks(fake_pid).unwrap_or(0);

    // Warm up (connection pools, caches), not reported. The held run's demo model answers
    // one word a delay: no warm-up there.
    let warm_routes: &[Route] = if cfg.held == 0 {
        &[Route::Native, Route::V1]
    } else {
        &[]
    };
    if !warm_routes.is_empty() {
        log("warm-up");
    }
    for &route in warm_routes {
        let _ = closed(
            &ctx,
            "warmup",
            route,
            ctx.plain(),
            8,
            if cfg.smoke { 1.0 } else { 3.0 },
        )
        .await;
    }

    if cfg.held > 0 {
        report.held = Some(crate::held::held(&ctx, cfg.held, cfg.held_rate).await);
    } else if let Some(secs) = cfg.soak_secs {
        report.soak = Some(crate::soak::soak(&ctx, secs, cfg.soak_streams).await);
    } else {
        for def in crate::scenarios::select(&cfg.scenarios)? {
            let d = (def.directive)(ctx.plain());
            report
                .scenarios
                .push(scenario(&ctx, def.name, def.route, d).await);
        }
        if cfg.burst > 0 {
            report.burst = Some(crate::burst::burst(&ctx, cfg.burst).await);
        }
        report.streams = Some(streams(&ctx).await);
        for (tool, route) in [
            (false, Route::Native),
            (true, Route::Native),
            (false, Route::V1),
            (true, Route::V1),
        ] {
            log(format!(
                "commit probe, {} turns{} (commits before the first text token / after it)",
                if tool { "tool" } else { "plain" },
                if route == Route::V1 { " via /v1" } else { "" }
            ));
            let cp = commit_probe(&ctx, tool, route).await;
            log(format!(
                "  xact_commit before first token {}/turn, after {}/turn",
                crate::stats::f(cp.xact_before_first_token, 2),
                crate::stats::f(cp.xact_after_first_token, 2)
            ));
            match (tool, route) {
                (false, Route::Native) => report.commit_probe = Some(cp),
                (true, Route::Native) => report.commit_probe_tool = Some(cp),
                (false, Route::V1) => report.commit_probe_v1 = Some(cp),
                (true, Route::V1) => report.commit_probe_v1_tool = Some(cp),
            }
        }
        if cfg.smoke {
            // Exercises the soak's code path briefly; the real one is `--soak 600`.
            report.soak = Some(crate::soak::soak(&ctx, 5, 20).await);
        }
    }

    report.generator_cpu_ms = sys::cpu_ticks(std::process::id())
        .map(|t| t.saturating_sub(gen_ticks0) as f64 * 1000.0 / sys::CLK_TCK);
    report.mcp_server_cpu_ms = sys::cpu_ticks(mcp_pid).map(|t| t as f64 * 1000.0 / sys::CLK_TCK);
    report.fake_upstream_cpu_ms = sys::cpu_ticks(fake_pid)
        .map(|t| t.saturating_sub(fake_ticks0) as f64 * 1000.0 / sys::CLK_TCK);
    report.machine.loadavg_end = sys::loadavg();
    report.wall_secs = t_start.elapsed().as_secs_f64();

    // Kit health: the kit works if turns completed in every scenario and streams opened.
    let mut failures = Vec::new();
    for s in &report.scenarios {
        let ok: usize = s.sweep.iter().map(|p| p.ok).sum::<usize>()
            + s.half.as_ref().map(|p| p.ok).unwrap_or(0);
        if ok == 0 {
            failures.push(format!("{}: no turn completed", s.name));
        }
        let direct: usize = s.sweep.iter().map(|p| p.direct_ttft.n).sum();
        if direct == 0 {
            failures.push(format!(
                "{}: no direct (baseline) request completed",
                s.name
            ));
        }
        if s.name.contains("tool")
            && s.half.as_ref().map(|p| p.ok).unwrap_or(0)
                + s.sweep.iter().map(|p| p.ok).sum::<usize>()
                > 0
        {
            // fine
        }
    }
    if let Some(st) = &report.streams {
        for p in &st.points {
            if p.reached * 2 < p.open_streams {
                failures.push(format!(
                    "streams: only {} of {} opened",
                    p.reached, p.open_streams
                ));
            }
        }
        if st.completed == 0 {
            failures.push("streams: no held turn completed after release".into());
        }
    }
    for cp in [
        &report.commit_probe,
        &report.commit_probe_tool,
        &report.commit_probe_v1,
        &report.commit_probe_v1_tool,
    ]
    .into_iter()
    .flatten()
    {
        if cp.completed == 0 {
            failures.push("commit probe: no turn completed".into());
        }
    }
    failures.extend(crate::report_extra::failures(&report));
    report.kit_ok = failures.is_empty();
    report.kit_failures = failures;
    report.config = Some(cfg.clone());

    drop(procs); // stop everything, drop the database
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(cfg.out_dir.join("report.json"), &json)?;
    let md = crate::report::markdown(&report);
    std::fs::write(cfg.out_dir.join("report.md"), &md)?;
    if let Some(path) = &cfg.results_md {
        std::fs::write(path, &md)?;
        std::fs::write(path.with_extension("json"), &json)?;
    }
    println!("{md}");
    log(format!(
        "report: {}",
        cfg.out_dir.join("report.md").display()
    ));
    Ok(report.kit_ok)
}
