//! Report sections for the MCP call, commits per turn kind, the burst and the soak.

use std::fmt::Write;

use crate::bench::{CommitProbe, Report};
use crate::stats::f;

pub(crate) fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "**met**",
        Some(false) => "**MISSED**",
        None => "not measured",
    }
}

/// What makes the kit itself fail (not a missed target): a new phase that produced nothing.
pub fn failures(r: &Report) -> Vec<String> {
    let mut out = crate::image::failures(r);
    for sc in r.scenarios.iter().filter(|s| s.name.contains("MCP")) {
        let calls: u64 = sc
            .sweep
            .iter()
            .chain(&sc.half)
            .filter_map(|p| p.mcp.as_ref())
            .map(|m| m.tool_call.n as u64)
            .sum();
        if calls == 0 {
            out.push(format!("{}: no MCP call completed", sc.name));
        }
    }
    if let Some(b) = &r.burst {
        if b.completed == 0 {
            out.push("burst: no turn completed".into());
        }
    }
    if let Some(h) = &r.held {
        if h.streaming == 0 {
            out.push("held streams: none opened".into());
        }
    }
    if let Some(s) = &r.soak {
        if s.turns_ok == 0 {
            out.push("soak: no turn completed".into());
        }
        if s.invariant.is_none() {
            out.push(format!(
                "soak: the budget invariant could not be read ({})",
                s.invariant_error.as_deref().unwrap_or("?")
            ));
        }
    }
    out.extend(crate::search::failures(r));
    out.extend(crate::interp::failures(r));
    out.extend(crate::knowledge::report::failures(r));
    out.extend(crate::report_catalogue::failures(r));
    out
}

pub fn markdown(r: &Report, s: &mut String) {
    crate::report_compare::markdown(r, s);
    mcp(r, s);
    commits(r, s);
    crate::report_v1::markdown(r, s);
    crate::report_catalogue::markdown(r, s);
    crate::report_image::markdown(r, s);
    burst(r, s);
    crate::report_held::markdown(r, s);
    soak(r, s);
    crate::search::markdown(r, s);
    crate::interp::markdown(r, s);
    crate::knowledge::report::markdown(r, s);
}

fn mcp(r: &Report, s: &mut String) {
    let Some(sc) = r.scenarios.iter().find(|s| s.name.contains("MCP")) else {
        return;
    };
    let _ = writeln!(s, "\n## MCP tool call (Streamable HTTP)\n");
    let _ = writeln!(s, "One `loadkit__echo` call per turn against the kit's MCP server (loopback, answers at once). **Added per MCP call** = p50 of `tool_call` → `tool_result` on the turn's event stream as the generator receives it, minus p50 of a `tools/call` round trip on the kit's own persistent session to the same server, sampled concurrently in the same phase. New connections = TCP connections the MCP server accepted during the phase, per client.\n");
    let _ = writeln!(s, "| phase | MCP calls through the server | new connections | call through the server p50 / p95 ms | direct call p50 / p95 ms | added p50 / p95 ms | direct calls (new connections) |\n|---|---|---|---|---|---|---|");
    for p in sc.sweep.iter().chain(&sc.half) {
        let Some(m) = &p.mcp else { continue };
        let phase = match (p.concurrency, p.rate_per_s) {
            (Some(c), _) => format!("closed, concurrency {c}"),
            (_, Some(r)) => format!("open, {r:.0}/s"),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {phase} | {} | {} | {} / {} | {} / {} | {} / {} | {} ({}) |",
            m.calls,
            m.connections,
            f(m.tool_call.p50_ms, 2),
            f(m.tool_call.p95_ms, 2),
            f(m.direct_call.p50_ms, 2),
            f(m.direct_call.p95_ms, 2),
            f(m.added_p50_ms, 2),
            f(m.added_p95_ms, 2),
            m.direct_calls,
            m.direct_connections
        );
    }
    let lowest = sc.sweep.first().and_then(|p| p.mcp.as_ref());
    let half = sc.half.as_ref().and_then(|p| p.mcp.as_ref());
    let (calls, conns) = sc
        .sweep
        .iter()
        .chain(&sc.half)
        .filter_map(|p| p.mcp.as_ref())
        .fold((0, 0), |(a, b), m| (a + m.calls, b + m.connections));
    let _ = writeln!(s, "\n| target | measured | verdict |\n|---|---|---|");
    for (label, m) in [("lowest concurrency", lowest), ("half of saturation", half)] {
        let v = m.and_then(|m| m.added_p50_ms);
        let _ = writeln!(
            s,
            "| added per MCP call p50 ≤ 1 ms ({label}) | {} ms | {} |",
            f(v, 2),
            verdict(v.map(|x| x <= 1.0))
        );
    }
    let _ = writeln!(s, "| no new connection per call (all phases: connections ≤ 5 % of calls) | {conns} connections for {calls} calls | {} |",
        verdict((calls > 0).then_some(conns * 20 <= calls)));
}

pub(crate) fn probe_row(s: &mut String, label: &str, c: &CommitProbe) {
    let total = c
        .xact_before_first_token
        .zip(c.xact_after_first_token)
        .map(|(a, b)| a + b);
    let _ = writeln!(
        s,
        "| {label} | {} | {} / {} | {} / {} | {} | {} / {} |",
        c.turns,
        c.reached_first_token,
        c.completed,
        f(c.xact_before_first_token, 2),
        f(c.xact_after_first_token, 2),
        f(total, 2),
        f(c.xact_raw_before_first_token, 2),
        f(c.xact_raw_after_first_token, 2)
    );
}

fn commits(r: &Report, s: &mut String) {
    let (Some(plain), Some(tool)) = (&r.commit_probe, &r.commit_probe_tool) else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Commits per turn, plain and tool turns (same run)\n"
    );
    let _ = writeln!(s, "Held turns; `xact_commit` of the test database read before, once every turn holds its first text token, and after release, minus the background rate. A tool turn's first model call answers one `calculator` call, so \"before the first text token\" includes that tool step's commit.\n");
    let _ = writeln!(s, "| turns | n | holding / completed | before / after the first text token | total | raw before / after |\n|---|---|---|---|---|---|");
    probe_row(s, "plain", plain);
    probe_row(s, "tool (1 tool step)", tool);
    let sum = |c: &CommitProbe| {
        c.xact_before_first_token
            .zip(c.xact_after_first_token)
            .map(|(a, b)| a + b)
    };
    let extra = sum(tool).zip(sum(plain)).map(|(t, p)| t - p);
    let _ = writeln!(s, "\n| target | measured | verdict |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| plain: 1 commit before the first token, 1 after | {} / {} | {} |",
        f(plain.xact_before_first_token, 2),
        f(plain.xact_after_first_token, 2),
        verdict(
            plain
                .xact_before_first_token
                .zip(plain.xact_after_first_token)
                .map(|(a, b)| a <= 1.05 && b <= 1.05)
        )
    );
    let _ = writeln!(
        s,
        "| tool turns: at most one more commit per tool step | {} more | {} |",
        f(extra, 2),
        verdict(extra.map(|x| x <= 1.05))
    );
}

fn burst(r: &Report, s: &mut String) {
    let Some(b) = &r.burst else { return };
    let _ = writeln!(s, "\n## Burst: {} turn starts at one instant\n", b.starts);
    let _ = writeln!(s, "Each on a conversation of its own; upstream as in the plain scenario. Headers = request sent → response headers (a start waits for its turn in the server's queue before its first commit). Load average after: `{}`.\n", b.loadavg);
    let _ = writeln!(s, "| starts | admitted | 503 | other statuses | completed | headers p50 / p99 / max ms | TTFT p50 / p99 ms | turn p99 ms | all done in s | server peak fds | server RSS idle → peak MiB | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|");
    let _ =
        writeln!(
        s,
        "| {} | {} | {} | {:?} | {} | {} / {} / {} | {} / {} | {} | {:.1} | {} | {} → {} | {:?} |",
        b.starts,
        b.admitted,
        b.refused_503,
        b.other_status,
        b.completed,
        f(b.headers.p50_ms, 0),
        f(b.headers.p99_ms, 0),
        f(b.headers.max_ms, 0),
        f(b.ttft.p50_ms, 0),
        f(b.ttft.p99_ms, 0),
        f(b.turn_total.p99_ms, 0),
        b.secs,
        b.peak_server_fds.map(|x| x.to_string()).unwrap_or("–".into()),
        f(b.idle_server_rss_mib, 1),
        f(b.peak_server_rss_mib, 1),
        b.errors
    );
    let _ = writeln!(
        s,
        "\n| target | measured | verdict |\n|---|---|---|\n| a burst of starts is admitted, none refused | {} of {} admitted, {} × 503 | {} |",
        b.admitted,
        b.starts,
        b.refused_503,
        verdict((b.starts > 0).then_some(b.admitted == b.starts))
    );
    let h = &b.health;
    let _ = writeln!(
        s,
        "| the pool stayed healthy (`/readyz` 2xx throughout, database up) | {} of {} probes failed, slowest {} ms; pool in use ≤ {} of {}, waiting ≤ {}, starts queued ≤ {}, db_up min {} | {} |",
        h.readyz_failures,
        h.readyz_probes,
        f(h.readyz_max_ms, 0),
        f(h.pool_in_use_max, 0),
        f(h.pool_max_connections, 0),
        f(h.pool_waiting_max, 0),
        f(h.starts_waiting_max, 0),
        f(h.db_up_min, 0),
        verdict((h.readyz_probes > 0).then_some(h.healthy()))
    );
    let _ = writeln!(
        s,
        "\nGenerator descriptors at peak: {} (the hard limit here is 20,000 per process).",
        b.peak_generator_fds
            .map(|x| x.to_string())
            .unwrap_or("–".into())
    );
}

fn soak(r: &Report, s: &mut String) {
    let Some(k) = &r.soak else { return };
    let _ = writeln!(s, "\n## Soak: {} streams for {} s\n", k.streams, k.secs);
    let _ = writeln!(s, "Every worker starts its next turn when one ends: plain turns of 40 deltas 100 ms apart, one in ten a tool turn, one in ten an MCP tool turn; accounts 1 and 2 have small budgets of their own (refusals and reservations near the limit are part of the load). Load average at start `{}`, at end `{}`.\n", k.loadavg_start, k.loadavg_end);
    if k.turns_per_conversation > 0 {
        let _ = writeln!(s, "Each worker moves to a new conversation every {} turns ({} created), so the history a turn loads stays the same size throughout; memory that still grows is not the conversations getting longer.\n", k.turns_per_conversation, k.conversations_created);
    }
    let _ = writeln!(s, "| minute | server RSS MiB | server fds | streams upstream | `active_streams` | `/metrics` series | pool in use | db backends | turns ok so far |\n|---|---|---|---|---|---|---|---|---|");
    let mut last_minute = None;
    for p in &k.samples {
        let minute = (p.t_s / 60.0).floor() as u64;
        if last_minute == Some(minute) {
            continue;
        }
        last_minute = Some(minute);
        let _ = writeln!(
            s,
            "| {:.0} s | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.t_s,
            f(p.rss_mib, 1),
            p.fds.map(|x| x.to_string()).unwrap_or("–".into()),
            p.streaming,
            f(p.active_streams, 0),
            p.metric_series.map(|x| x.to_string()).unwrap_or("–".into()),
            f(p.pool_in_use, 0),
            p.db_connections
                .map(|x| x.to_string())
                .unwrap_or("–".into()),
            p.turns_ok
        );
    }
    let inv = k.invariant.clone().unwrap_or_default();
    let _ = writeln!(s, "\nTurns completed: {}. Not completed, by kind: {:?} (`http_429`: the small budgets refusing, as intended).\n", k.turns_ok, k.errors);
    let _ = writeln!(s, "| check | measured | verdict |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| flat memory (late mean ≤ early mean × 1.1 + 8 MiB) | {} → {} MiB | {} |",
        f(k.rss_early_mib, 1),
        f(k.rss_late_mib, 1),
        verdict(Some(k.flat_memory))
    );
    let _ = writeln!(
        s,
        "| RSS slope after warm-up (least squares), all / second half | {} / {} MiB per minute | – |",
        f(k.rss_slope_mib_per_min, 2),
        f(k.rss_slope_late_mib_per_min, 2)
    );
    let _ = writeln!(
        s,
        "| flat descriptors (late mean ≤ early mean × 1.1 + 16) | {} → {} | {} |",
        f(k.fds_early, 0),
        f(k.fds_late, 0),
        verdict(Some(k.flat_fds))
    );
    let c = &k.conflicts;
    let deadlocks = match (c.deadlocks_before, c.deadlocks_after) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let _ = writeln!(
        s,
        "| no deadlock (`pg_stat_database.deadlocks` before → after) | {} → {} | {} |",
        c.deadlocks_before
            .map(|x| x.to_string())
            .unwrap_or("–".into()),
        c.deadlocks_after
            .map(|x| x.to_string())
            .unwrap_or("–".into()),
        verdict(deadlocks.map(|d| d == 0))
    );
    let _ = writeln!(
        s,
        "| no 5xx answer (turns and conversation creations) | {} | {} |",
        k.server_errors,
        verdict(Some(k.server_errors == 0))
    );
    let _ = writeln!(
        s,
        "| conflicts lost and retried (`agentchat_db_conflicts_total`); title calls (`agentchat_titles_total`) | {} ; {} | – |",
        f(c.retried, 0),
        f(c.titles, 0)
    );
    let _ = writeln!(
        s,
        "| test-database backends, first fifth → last fifth (mean) | {} → {} | – |",
        f(k.db_connections_early, 1),
        f(k.db_connections_late, 1)
    );
    let _ = writeln!(
        s,
        "| budget invariant: no period spent > limit ({} periods) | {} over | {} |",
        inv.periods,
        inv.over_limit,
        verdict(k.invariant.as_ref().map(|i| i.over_limit == 0))
    );
    let _ = writeln!(
        s,
        "| nothing left reserved or held after the last turn | {} tokens reserved, {} holds | {} |",
        inv.reserved_left,
        inv.holds_left,
        verdict(
            k.invariant
                .as_ref()
                .map(|i| i.reserved_left == 0 && i.holds_left == 0)
        )
    );
    let _ = writeln!(
        s,
        "\nThe small-budget accounts spent up to {:.1} % of their limit.",
        inv.tight_spent_fraction * 100.0
    );
}
