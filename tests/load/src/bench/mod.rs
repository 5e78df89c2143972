//! The orchestrator: processes, setup, scenarios, measurements. [`run_guarded`] runs one
//! benchmark (or a held or soak run) phase by phase, each phase in its own file:
//!
//! * `config` — the command line;
//! * `setup` — the helper processes and the server, and their teardown;
//! * `seed` — users, keys, conversations, histories, the checkpoint;
//! * `ctx` — what every phase shares;
//! * `measure` — sampling a phase and its direct baseline;
//! * `models` — the closed and open load models, and the warm-up;
//! * `scenario` — the saturation sweep and the half-load run of a scenario;
//! * `streams` — many streams held open at once;
//! * `commit_probe` — Postgres commits per turn before and after the first token;
//! * `health` — whether the kit itself worked;
//! * `results` — the report's data and writing it out.

mod calibrate;
mod commit_probe;
mod config;
mod ctx;
mod health;
mod measure;
mod models;
mod results;
mod scenario;
mod seed;
mod setup;
mod streams;

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::client;
use crate::sys;

pub use commit_probe::CommitProbe;
pub use config::Config;
pub(crate) use ctx::{fd_count, log, upstream_active, Conv, Ctx};
pub use measure::Phase;
pub use results::Report;
pub use scenario::ScenarioResult;
pub(crate) use setup::{start_on, Started, Target};

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
    report.machine = results::machine(&cfg);
    anyhow::ensure!(
        cfg.server_bin.exists(),
        "server binary {} not found (build it, or set AGENTCHAT_BIN)",
        cfg.server_bin.display()
    );

    if cfg.knowledge {
        // A run of its own: the knowledge scenarios' server on the pgvector cluster only.
        report.knowledge = Some(crate::knowledge::run(&cfg).await);
    } else {
        chat(&cfg, &mut report, t_start).await?;
        if cfg.smoke {
            // After the chat server is gone: its own server and database on pgvector.
            report.knowledge = Some(crate::knowledge::run(&cfg).await);
        }
    }
    report.machine.loadavg_end = sys::loadavg();
    report.wall_secs = t_start.elapsed().as_secs_f64();

    // Kit health: the kit works if turns completed in every scenario and streams opened.
    let failures = health::kit_failures(&report);
    report.kit_ok = failures.is_empty();
    report.kit_failures = failures;
    report.config = Some(cfg.clone());
    results::write(&cfg, &report)?;
    Ok(report.kit_ok)
}

/// The chat benchmark (or the held, soak or search run): its server, its phases, and its
/// teardown (the processes stopped, the database dropped) before the report is written.
async fn chat(cfg: &Config, report: &mut Report, t_start: Instant) -> anyhow::Result<()> {
    let cfg = cfg.clone();
    let setup::Started {
        procs,
        db,
        fake_pid,
        fake_base,
        fake_b_pid,
        fake_b_base,
        mcp_pid,
        mcp_base,
        server_pid,
        api,
    } = setup::start(&cfg).await?;
    let seed::Seeded {
        tokens,
        keys,
        convs,
        catalogue_convs,
        image_convs,
    } = seed::seed(&cfg, &api, &db).await?;
    // Each user uploads the photo once, before anything is measured.
    let image = match cfg.images() {
        true => Some(crate::image::prepare(&api, &tokens, server_pid, &cfg.out_dir).await?),
        false => None,
    };
    report.checkpoint_before = seed::checkpoint(&cfg);
    report.setup_secs = t_start.elapsed().as_secs_f64();
    log(format!(
        "setup done in {:.1} s; checkpoint {}",
        report.setup_secs, report.checkpoint_before
    ));

    let direct_http = client::http_client(1000)?;
    setup::wait_mcp_connected(&api, &tokens[0]).await?;
    let mcp_direct = crate::mcp::DirectSession::open(direct_http.clone(), &mcp_base).await?;
    let ctx = Arc::new(Ctx {
        cfg: cfg.clone(),
        api,
        direct_http,
        fake_base,
        fake_b_base,
        mcp_base,
        mcp_direct: Some(mcp_direct),
        tokens,
        keys: Arc::new(keys),
        pool: Arc::new(Mutex::new(convs.into_iter().collect())),
        catalogue_pool: Arc::new(Mutex::new(catalogue_convs.into_iter().collect())),
        image_pool: Arc::new(Mutex::new(image_convs.into_iter().collect())),
        image,
        server_pid,
        fake_pid,
        db,
    });
    let gen_ticks0 = sys::cpu_ticks(std::process::id()).unwrap_or(0);
    let fake_ticks0 = sys::cpu_ticks(fake_pid).unwrap_or(0);
    let fake_b_ticks0 = fake_b_pid.and_then(sys::cpu_ticks).unwrap_or(0);

    models::warm_up(&ctx).await;

    let search = || crate::search::search(&ctx, cfg.search_own, cfg.search_others, cfg.search_secs);
    let interp = || crate::interp::interp(&ctx, cfg.interp_runs, cfg.interp_secs);
    if cfg.search {
        report.search = Some(search().await);
    } else if cfg.interp {
        report.interp = Some(interp().await);
    } else if cfg.held > 0 {
        report.held = Some(crate::held::held(&ctx, cfg.held, cfg.held_rate).await);
    } else if let Some(secs) = cfg.soak_secs {
        report.soak = Some(crate::soak::soak(&ctx, secs, cfg.soak_streams).await);
    } else {
        for def in crate::scenarios::select(&cfg.scenarios)? {
            let d = (def.directive)(ctx.plain());
            report
                .scenarios
                .push(scenario::scenario(&ctx, def.name, def.route, d).await);
        }
        if let Some(prepared) = &ctx.image {
            report.image = Some(crate::image::result(&ctx, prepared, &report.scenarios).await);
        }
        if cfg.burst > 0 {
            report.burst = Some(crate::burst::burst(&ctx, cfg.burst).await);
        }
        report.streams = Some(streams::streams(&ctx).await);
        commit_probe::commit_probes(&ctx, report).await;
        if cfg.smoke {
            // Exercises the soak's code path briefly; the real one is `--soak 600`.
            report.soak = Some(crate::soak::soak(&ctx, 5, 20).await);
            report.search = Some(search().await);
            report.interp = Some(interp().await);
        }
    }

    report.generator_cpu_ms = sys::cpu_ticks(std::process::id())
        .map(|t| t.saturating_sub(gen_ticks0) as f64 * 1000.0 / sys::CLK_TCK);
    report.mcp_server_cpu_ms = sys::cpu_ticks(mcp_pid).map(|t| t as f64 * 1000.0 / sys::CLK_TCK);
    report.fake_upstream_cpu_ms = sys::cpu_ticks(fake_pid).map(|t| {
        // Both fake upstreams when the catalogue scenario runs a second one.
        let b = fake_b_pid
            .and_then(sys::cpu_ticks)
            .map_or(0, |t| t.saturating_sub(fake_b_ticks0));
        (t.saturating_sub(fake_ticks0) + b) as f64 * 1000.0 / sys::CLK_TCK
    });
    if cfg.catalogue() {
        report.catalogue_usage = Some(crate::catalogue::usage(&ctx));
    }
    drop(procs); // stop everything, drop the database
    Ok(())
}
