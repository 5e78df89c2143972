//! The code interpreter under load (`--interp`, and briefly in every smoke run): turns whose
//! model call asks for `run_python` `print(1)` (the fake upstream's `py=1`), then a text
//! answer.
//!
//! Phase 1 alternates one such turn with one bare `python3 -c 'print(1)'` started by the
//! kit (the interpreter the jail runs), one at a time: **added per run** = p50 of the turn's
//! `tool_call` → `tool_result` (the whole tool: admission, the jail, the result's way to the
//! client) − p50 of the bare start. Phase 2 samples a bystander's plain-chat TTFT alone;
//! phase 3 runs `LOOPS` users' closed loops of such turns (more than the server's default
//! `max_concurrent` jails, so it runs saturated) beside the bystander: runs/s at saturation,
//! and the bystander's TTFT beside them. When the server's `/readyz` says it cannot make a
//! jail (no bubblewrap, no user namespaces) the phase is skipped with its reason: CI images
//! need not have either.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::{log, Conv, Ctx, Report};
use crate::client::{us, Outcome};
use crate::fake::Directive;
use crate::stats::{f, sub, Dist};

/// Users running jails at once in phase 3 (the server's default `max_concurrent` is 4; a
/// smoke run has fewer users, and runs as many as it has).
const LOOPS: usize = 6;
/// The interpreter the server's jail runs by default, started bare for the baseline.
const PYTHON: &str = "/usr/bin/python3";
const TURN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Default, Serialize)]
pub struct InterpResult {
    /// Why the phase did not run (no bubblewrap), if it did not.
    pub skipped: Option<String>,
    pub phase_secs: f64,
    /// Phase 1: `run_python print(1)` as the client sees it, and bare `python3 -c`.
    pub tool_alone: Dist,
    pub bare_python: Dist,
    pub added_p50_ms: Option<f64>,
    pub added_p99_ms: Option<f64>,
    /// Phase 3: runs that came back with a successful result, per second.
    pub loops: usize,
    pub runs: usize,
    pub runs_per_sec: f64,
    pub tool_saturated: Dist,
    /// The bystander's plain-chat TTFT alone (phase 2) and beside the runs (phase 3).
    pub bystander_alone: Dist,
    pub bystander_during: Dist,
    pub errors: BTreeMap<String, u64>,
}

fn interp_turn(d: Directive) -> String {
    format!(
        "run it {}",
        Directive {
            tool: true,
            py: true,
            ..d
        }
        .render()
    )
}

async fn turn(ctx: &Ctx, conv: &Conv, content: &str) -> Outcome {
    ctx.api
        .turn(
            &ctx.tokens[conv.user],
            &conv.id,
            content,
            Instant::now(),
            TURN_TIMEOUT,
            None,
        )
        .await
}

/// Why the server cannot make a jail, as its `/readyz` tells the admin (user 0); None: it can.
async fn no_jail(ctx: &Ctx) -> Option<String> {
    let body: serde_json::Value = match ctx
        .api
        .http
        .get(format!("{}/readyz", ctx.api.base))
        .bearer_auth(&ctx.tokens[0])
        .send()
        .await
    {
        Ok(r) => r.json().await.unwrap_or_default(),
        Err(e) => return Some(format!("/readyz failed: {e}")),
    };
    let sandbox = &body["sandbox"];
    match sandbox["level"].as_str() {
        Some("unavailable") => Some(format!(
            "the server cannot make a jail here: {}",
            sandbox["reason"].as_str().unwrap_or("no reason given")
        )),
        Some(_) => None,
        None => Some(format!("/readyz names no sandbox level: {body}")),
    }
}

/// One bare `python3 -c 'print(1)'`, µs (None: it failed).
async fn bare() -> Option<u64> {
    let t = Instant::now();
    let out = tokio::process::Command::new(PYTHON)
        .args(["-c", "print(1)"])
        .output()
        .await
        .ok()?;
    (out.status.success() && out.stdout == b"1\n").then(|| us(t.elapsed()))
}

/// Conversations of `n` different users other than user 0 (the bystander); the rest go back.
fn distinct_users(ctx: &Ctx, n: usize) -> Vec<Conv> {
    let (mut picked, mut back) = (Vec::<Conv>::new(), Vec::new());
    while picked.len() < n {
        let Some(c) = ctx.take() else { break };
        if c.user != 0 && !picked.iter().any(|p| p.user == c.user) {
            picked.push(c);
        } else {
            back.push(c);
        }
    }
    for c in back {
        Ctx::give(&ctx.pool, c);
    }
    picked
}

/// Turns on `conv` one after another until `until`: the conversation back, and the outcomes.
async fn loop_until(
    ctx: Arc<Ctx>,
    conv: Conv,
    content: String,
    until: Instant,
) -> (Conv, Vec<Outcome>) {
    let mut outs = Vec::new();
    while Instant::now() < until {
        outs.push(turn(&ctx, &conv, &content).await);
    }
    (conv, outs)
}

fn tally(outs: &[Outcome], errors: &mut BTreeMap<String, u64>) {
    for e in outs.iter().filter_map(|o| o.error.as_ref()) {
        *errors.entry(e.clone()).or_insert(0) += 1;
    }
}

fn tool_times(outs: &[Outcome]) -> Vec<u64> {
    outs.iter()
        .filter(|o| o.ok && o.error.is_none())
        .filter_map(|o| o.tool_us)
        .collect()
}

fn ttfts(outs: &[Outcome]) -> Vec<u64> {
    outs.iter()
        .filter(|o| o.ok)
        .filter_map(|o| o.ttft_us)
        .collect()
}

pub async fn interp(ctx: &Arc<Ctx>, runs: usize, secs: f64) -> InterpResult {
    let mut r = InterpResult {
        phase_secs: secs,
        ..Default::default()
    };
    if let Some(why) = no_jail(ctx).await {
        log(format!("interp: skipped: {why}"));
        r.skipped = Some(why);
        return r;
    }
    let plain = ctx.plain();
    let content = interp_turn(plain);
    let users = distinct_users(ctx, LOOPS);
    r.loops = users.len();
    let Some(bystander) = ctx.take() else {
        r.errors.insert("no_free_conversation".into(), 1);
        return r;
    };
    let Some(first) = users.first().cloned() else {
        r.errors.insert("no_free_conversation".into(), 1);
        Ctx::give(&ctx.pool, bystander);
        return r;
    };

    // Phase 1: one run at a time, alternated with bare Python.
    let (mut alone, mut bare_us, mut outs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        outs.push(turn(ctx, &first, &content).await);
        bare_us.extend(bare().await);
    }
    alone.extend(tool_times(&outs));
    tally(&outs, &mut r.errors);
    r.tool_alone = Dist::of(alone);
    r.bare_python = Dist::of(bare_us);
    r.added_p50_ms = sub(r.tool_alone.p50_ms, r.bare_python.p50_ms);
    r.added_p99_ms = sub(r.tool_alone.p99_ms, r.bare_python.p99_ms);
    log(format!(
        "interp: print(1) through run_python p50 {} ms, bare python3 p50 {} ms",
        f(r.tool_alone.p50_ms, 1),
        f(r.bare_python.p50_ms, 1)
    ));

    // Phase 2: the bystander alone.
    let phase = Duration::from_secs_f64(secs);
    let plain_content = format!("bystander {}", plain.render());
    let (bystander, by) = loop_until(
        ctx.clone(),
        bystander,
        plain_content.clone(),
        Instant::now() + phase,
    )
    .await;
    r.bystander_alone = Dist::of(ttfts(&by));
    tally(&by, &mut r.errors);

    // Phase 3: the loops, saturated, beside the bystander.
    let t0 = Instant::now();
    let until = t0 + phase;
    let loops: Vec<_> = users
        .into_iter()
        .map(|c| tokio::spawn(loop_until(ctx.clone(), c, content.clone(), until)))
        .collect();
    let (bystander, by) = loop_until(ctx.clone(), bystander, plain_content, until).await;
    Ctx::give(&ctx.pool, bystander);
    let mut runs_out = Vec::new();
    for h in loops {
        if let Ok((conv, o)) = h.await {
            Ctx::give(&ctx.pool, conv);
            runs_out.extend(o);
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let done = tool_times(&runs_out);
    r.runs = done.len();
    r.runs_per_sec = done.len() as f64 / elapsed.max(1e-9);
    r.tool_saturated = Dist::of(done);
    r.bystander_during = Dist::of(ttfts(&by));
    tally(&runs_out, &mut r.errors);
    tally(&by, &mut r.errors);
    log(format!(
        "interp: {:.1} runs/s with {} users; bystander TTFT p50 {} ms",
        r.runs_per_sec,
        r.loops,
        f(r.bystander_during.p50_ms, 1)
    ));
    r
}

/// Whether the phase measured anything (a skip is not a failure).
pub fn failures(r: &Report) -> Vec<String> {
    match &r.interp {
        Some(x) if x.skipped.is_none() && (x.tool_alone.n == 0 || x.runs == 0) => {
            vec![format!(
                "interp: no run_python run succeeded ({:?})",
                x.errors
            )]
        }
        Some(x) if x.skipped.is_none() && x.bystander_during.n == 0 => {
            vec![format!(
                "interp: the bystander's turns never answered ({:?})",
                x.errors
            )]
        }
        _ => Vec::new(),
    }
}

pub fn markdown(r: &Report, s: &mut String) {
    let Some(x) = &r.interp else { return };
    let _ = writeln!(s, "\n## Code interpreter: `run_python` `print(1)`\n");
    if let Some(why) = &x.skipped {
        let _ = writeln!(s, "Skipped: {why}.");
        return;
    }
    let _ = writeln!(
        s,
        "One turn at a time whose tool call is `run_python` `print(1)`, alternated with a bare \
         `python3 -c 'print(1)'` started by the kit; then {} users' closed loops of such turns \
         for {:.0} s (saturating the server's jail slots) beside a bystander's plain chat, and \
         the bystander alone for as long.\n",
        x.loops, x.phase_secs
    );
    let _ = writeln!(
        s,
        "| measured | n | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|"
    );
    for (label, d) in [
        (
            "run_python print(1), tool_call → tool_result",
            &x.tool_alone,
        ),
        ("bare python3 -c 'print(1)'", &x.bare_python),
        ("run_python at saturation", &x.tool_saturated),
        ("bystander's TTFT, alone", &x.bystander_alone),
        ("bystander's TTFT, beside the runs", &x.bystander_during),
    ] {
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} |",
            d.n,
            f(d.p50_ms, 1),
            f(d.p95_ms, 1),
            f(d.p99_ms, 1),
            f(d.max_ms, 1)
        );
    }
    let _ = writeln!(
        s,
        "\nAdded per run (tool p50 − bare p50): **{} ms** (p99: {} ms). At saturation: \
         **{:.1} runs/s** ({} runs). Errors {:?}.",
        f(x.added_p50_ms, 1),
        f(x.added_p99_ms, 1),
        x.runs_per_sec,
        x.runs,
        x.errors
    );
}
