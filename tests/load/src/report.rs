//! The markdown report (the JSON one is the serialized `Report`).

use std::fmt::Write;

use crate::bench::{Phase, Report};
use crate::stats::f;

fn verdict(v: Option<f64>, ok: impl Fn(f64) -> bool) -> &'static str {
    match v {
        Some(x) if ok(x) => "**met**",
        Some(_) => "**MISSED**",
        None => "not measured",
    }
}

fn errs(p: &Phase) -> String {
    if p.errors.is_empty() {
        "0".into()
    } else {
        p.errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let cfg = r
        .config
        .clone()
        .unwrap_or_else(|| crate::bench::Config::from_args(&[]).expect("defaults"));
    let _ = writeln!(
        s,
        "# AgentChat load report{}\n",
        if cfg.smoke {
            " (SMOKE — checks the kit, not the speed)"
        } else {
            ""
        }
    );
    if !cfg.command.is_empty() {
        let _ = writeln!(s, "Command: `{}`\n", cfg.command);
    }
    let m = &r.machine;
    // A run without chat phases (`--knowledge`, `--search`) has no chat targets to show.
    let chat = !r.scenarios.is_empty() || r.streams.is_some() || r.commit_probe.is_some();
    let knowledge_only = cfg.knowledge;
    let pg = if knowledge_only {
        "on the knowledge cluster below".to_owned()
    } else {
        m.postgres_version.clone()
    };
    let _ = writeln!(s, "Machine: nproc={}, CPU `{}`, RAM {} MiB, kernel {}, PostgreSQL {pg} (same machine), open-files limit {}.  ", m.nproc, m.cpu_model, m.mem_total_mib, m.kernel, m.open_files_limit);
    let _ = writeln!(s, "Load average at start `{}`, at end `{}` (other builds/tests share this machine — see \"rough edges\").  ", m.loadavg_start, m.loadavg_end);
    if knowledge_only {
        let _ = writeln!(s, "Server binary `{}`. Wall time {:.0} s. The load generator shares the same {} cores as the server and Postgres (its CPU is in the tables).\n", m.server_bin, r.wall_secs, m.nproc);
    } else {
        let _ = writeln!(s, "Server binary `{}`. Wall time {:.0} s (setup {:.1} s; Postgres CHECKPOINT before measuring: {}). Generator CPU {} ms, fake upstream CPU {} ms — both share the same {} cores as the server and Postgres.\n",
        m.server_bin, r.wall_secs, r.setup_secs, r.checkpoint_before, f(r.generator_cpu_ms, 0), f(r.fake_upstream_cpu_ms, 0), m.nproc);
    }
    if chat {
        let _ = writeln!(s, "Fake upstream per model call: TTFT {} ms, {} deltas, {} ms apart (tool scenario: first call answers one `calculator` tool call, the second call the text). Added latency = through the server − direct to the fake upstream, the direct baseline sampled at {}/s concurrently in the same phase.\n",
        cfg.ttft_ms, cfg.deltas, cfg.gap_ms, cfg.direct_rate);
        if cfg.history > 0 {
            let _ = writeln!(s, "Long conversations: every conversation starts with {} earlier messages of 1 KiB (`--history`). The server reads them all, keeps what fits the context window and sends that upstream; the direct baseline sends a short request, so \"added\" includes the fake upstream reading the longer one.\n", cfg.history);
        }

        // Targets.
        let plain = r.scenarios.iter().find(|x| x.name.starts_with("plain"));
        let half = plain.and_then(|p| p.half.as_ref());
        let st = r.streams.as_ref();
        let cp = r.commit_probe.as_ref();
        let _ = writeln!(
            s,
            "## Targets (2 cores, Postgres local; evaluated on the plain-chat scenario)\n"
        );
        if let Some(r) = cfg.open_rate {
            let _ = writeln!(s, "**Open-model phases ran at a fixed {r}/s (`--open-rate`), not at half of saturation**: the TTFT and gap rows below compare builds at one rate; they do not judge those targets.\n");
        }
        let _ = writeln!(s, "| target | measured | verdict |\n|---|---|---|");
        let _ = writeln!(
            s,
            "| added TTFT p50 ≤ 2 ms at half of saturation | {} ms | {} |",
            f(half.and_then(|h| h.added_ttft_p50_ms), 2),
            verdict(half.and_then(|h| h.added_ttft_p50_ms), |x| x <= 2.0)
        );
        let _ = writeln!(
            s,
            "| added TTFT p99 ≤ 10 ms at half of saturation | {} ms | {} |",
            f(half.and_then(|h| h.added_ttft_p99_ms), 2),
            verdict(half.and_then(|h| h.added_ttft_p99_ms), |x| x <= 10.0)
        );
        let _ = writeln!(
            s,
            "| added inter-delta gap p99 ≤ 1 ms | {} ms | {} |",
            f(half.and_then(|h| h.added_gap_p99_ms), 2),
            verdict(half.and_then(|h| h.added_gap_p99_ms), |x| x <= 1.0)
        );
        let sat = plain.and_then(|p| p.saturation_per_s);
        let _ = writeln!(
            s,
            "| ≥ 500 streamed turns/s, full persistence (TTFT p99 ≤ {} ms) | {} turns/s | {} |",
            cfg.p99_bound_ms,
            f(sat, 0),
            verdict(sat, |x| x >= 500.0)
        );
        let per = st.and_then(|x| x.mib_per_1000);
        let _ = writeln!(
            s,
            "| ≤ 20 MB RSS per 1,000 open streams | {} MiB | {} |",
            f(per, 1),
            verdict(per, |x| x <= 20.0 * 1_000_000.0 / 1_048_576.0)
        );
        let growth = st.and_then(|x| x.growth_after_close_mib);
        let cycles = st.map(|x| x.after_close_rss_mib.len()).unwrap_or(0);
        let first_after = st.and_then(|x| x.after_close_rss_mib.first().copied().flatten());
        let growth_verdict = if cycles < 2 {
            "not measured (one cycle)"
        } else {
            match growth.zip(first_after) {
                Some((g, first)) if g <= first * 0.05 + 1.0 => "**met**",
                Some(_) => "**MISSED**",
                None => "not measured",
            }
        };
        let _ = writeln!(s, "| no RSS growth after streams close (after-close RSS, last vs first of {cycles} open/close cycles; ≤ 5 % + 1 MiB tolerance) | {} MiB (after close − idle: {} MiB) | {growth_verdict} |",
        f(growth, 1), f(st.and_then(|x| x.after_close_minus_idle_mib), 1));
        let before = cp.and_then(|c| c.xact_before_first_token);
        let after = cp.and_then(|c| c.xact_after_first_token);
        let rel = if cp.is_some_and(|c| c.reliable) {
            ""
        } else {
            " (unreliable: no stats-flush wait)"
        };
        let _ = writeln!(
            s,
            "| ≤ 1 commit before the first token | {}{rel} | {} |",
            f(before, 2),
            verdict(before, |x| x <= 1.0)
        );
        let _ = writeln!(
            s,
            "| ≤ 1 commit after the first token | {}{rel} | {} |",
            f(after, 2),
            verdict(after, |x| x <= 1.0)
        );
        let _ = writeln!(s, "\nCommits are `pg_stat_database.xact_commit` of the test database over {} held turns (every transaction, read-only ones included; each read waits {} s for Postgres to flush its counters), minus the server's background commits (hold sweeper slowed to once a day) measured over an equal window with no turns: {}/s (without the subtraction: {} before, {} after per turn). Writing transactions (xids assigned, cluster-wide so other tenants may add noise): before first token {}, after {} per turn.\n",
        cp.map_or(0, |c| c.turns), cfg.stats_wait_secs, f(cp.map(|c| c.background_commits_per_sec), 3),
        f(cp.and_then(|c| c.xact_raw_before_first_token), 2), f(cp.and_then(|c| c.xact_raw_after_first_token), 2),
        f(cp.and_then(|c| c.xid_before_first_token), 2), f(cp.and_then(|c| c.xid_after_first_token), 2));

        // Per scenario.
        let _ = writeln!(s, "## Scenarios\n");
        let _ = writeln!(s, "| scenario | saturation turns/s (p99 TTFT ≤ {} ms) | half-load rate/s | added TTFT p50 / p95 / p99 ms | added gap p99 ms | server CPU ms/turn | PG backends CPU ms/turn (all PG) | xact commits/turn | errors at half load |", cfg.p99_bound_ms);
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
        for sc in &r.scenarios {
            let h = sc.half.clone().unwrap_or_default();
            let _ = writeln!(
                s,
                "| {} | {} (at concurrency {}) | {} | {} / {} / {} | {} | {} | {} ({}) | {} | {} |",
                sc.name,
                f(sc.saturation_per_s, 0),
                sc.saturation_level
                    .map(|c| c.to_string())
                    .unwrap_or("–".into()),
                f(h.rate_per_s, 0),
                f(h.added_ttft_p50_ms, 2),
                f(h.added_ttft_p95_ms, 2),
                f(h.added_ttft_p99_ms, 2),
                f(h.added_gap_p99_ms, 2),
                f(h.server_cpu_ms_per_turn, 2),
                f(h.pg_backend_cpu_ms_per_turn, 2),
                f(h.pg_all_cpu_ms_per_turn, 2),
                f(h.xact_commits_per_turn, 2),
                errs(&h)
            );
        }
        for sc in &r.scenarios {
            let _ = writeln!(
                s,
                "\n### {}\n\n{}. Max throughput seen: {:.0} turns/s. \"In calls\": CPU per turn divided by the fake upstream's CPU per model call in the same phase, the machine's speed taken out (`src/bench/calibrate.rs`).\n",
                sc.name, sc.bound_note, sc.max_throughput_per_s
            );
            let _ = writeln!(s, "| model | conc / rate | turns | ok | turns/s | TTFT p50 / p95 / p99 ms (server) | direct TTFT p50 / p99 ms | gap p99 ms (server / direct) | turn p99 ms | server CPU ms/turn (util %) | PG backends ms/turn | upstream µs/call: server / PG in calls | RSS MiB | errors |");
            let _ = writeln!(
                s,
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
            );
            for p in sc.sweep.iter().chain(sc.half.iter()) {
                let cr = match (p.concurrency, p.rate_per_s) {
                    (Some(c), _) => format!("{c}"),
                    (_, Some(r)) => format!("{r:.0}/s"),
                    _ => "–".into(),
                };
                let _ = writeln!(s, "| {} | {} | {} | {} | {:.0} | {} / {} / {} | {} / {} | {} / {} | {} | {} ({}) | {} | {}: {} / {} | {} | {} |",
                p.model, cr, p.turns, p.ok, p.throughput_per_s,
                f(p.ttft.p50_ms, 1), f(p.ttft.p95_ms, 1), f(p.ttft.p99_ms, 1),
                f(p.direct_ttft.p50_ms, 1), f(p.direct_ttft.p99_ms, 1),
                f(p.gap.p99_ms, 2), f(p.direct_gap.p99_ms, 2), f(p.turn_total.p99_ms, 0),
                f(p.server_cpu_ms_per_turn, 2), f(p.server_cpu_util_pct, 0), f(p.pg_backend_cpu_ms_per_turn, 2),
                f(p.upstream_cpu_us_per_call, 0), f(p.server_cpu_in_calls, 2), f(p.pg_backend_cpu_in_calls, 2),
                f(p.server_rss_mib_after, 1), errs(p));
            }
        }

        if let Some(st) = st {
            let _ = writeln!(s, "\n### idle open streams\n");
            let _ = writeln!(s, "Upstream sends one delta, then holds the stream (a delta every 5 s) until released. Idle server RSS before: {} MiB.\n", f(st.idle_rss_mib, 1));
            let _ = writeln!(s, "| cycle | target open streams | streaming | seconds to open | server RSS MiB | server fds |\n|---|---|---|---|---|---|");
            for p in &st.points {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.1} | {} | {} |",
                    p.cycle,
                    p.open_streams,
                    p.reached,
                    p.seconds_to_open,
                    f(p.server_rss_mib, 1),
                    p.server_fds.map(|x| x.to_string()).unwrap_or("–".into())
                );
            }
            let fds = |v: &Option<usize>| v.map(|x| x.to_string()).unwrap_or("–".into());
            let _ = writeln!(s, "\nAfter close (per cycle, once the server's descriptors are back to idle ({}) and after 2 s of light traffic): {} MiB, with {} descriptors. Held turns completed after release: {}. Errors: {:?}. Per 1,000 open streams: {} MiB.",
            fds(&st.idle_fds),
            st.after_close_rss_mib.iter().map(|x| f(*x, 1)).collect::<Vec<_>>().join(", "),
            st.after_close_fds.iter().map(fds).collect::<Vec<_>>().join(", "),
            st.completed, st.errors, f(st.mib_per_1000, 1));
        }
    }
    crate::report_extra::markdown(r, &mut s);
    let _ = writeln!(
        s,
        "\n## Kit status: {}",
        if r.kit_ok {
            "OK".to_owned()
        } else {
            format!("FAILED — {}", r.kit_failures.join("; "))
        }
    );
    s
}
