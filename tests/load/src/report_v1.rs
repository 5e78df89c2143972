//! The report's section on the OpenAI-compatible route, side by side with the native one.

use std::fmt::Write;

use crate::bench::{CommitProbe, Report, ScenarioResult};
use crate::report_extra::{probe_row, verdict};
use crate::stats::f;

fn row(s: &mut String, route: &str, sc: &ScenarioResult) {
    let h = sc.half.clone().unwrap_or_default();
    let _ = writeln!(
        s,
        "| {route} | {} (at {}) | {:.0} | {} | {} / {} / {} | {} / {} / {} | {} | {} | {} |",
        f(sc.saturation_per_s, 0),
        sc.saturation_level
            .map(|c| c.to_string())
            .unwrap_or("–".into()),
        sc.max_throughput_per_s,
        f(h.rate_per_s, 0),
        f(h.ttft.p50_ms, 2),
        f(h.ttft.p95_ms, 2),
        f(h.ttft.p99_ms, 2),
        f(h.added_ttft_p50_ms, 2),
        f(h.added_ttft_p95_ms, 2),
        f(h.added_ttft_p99_ms, 2),
        f(h.server_cpu_ms_per_turn, 2),
        f(h.xact_commits_per_turn, 2),
        if h.errors.is_empty() {
            "0".to_owned()
        } else {
            format!("{:?}", h.errors)
        }
    );
}

fn total(c: &CommitProbe) -> Option<f64> {
    c.xact_before_first_token
        .zip(c.xact_after_first_token)
        .map(|(a, b)| a + b)
}

pub fn markdown(r: &Report, s: &mut String) {
    let v1 = r
        .scenarios
        .iter()
        .find(|x| x.name == crate::scenarios::V1_NAME);
    let native = r.scenarios.iter().find(|x| x.name == "plain chat");
    if v1.is_none() && r.commit_probe_v1.is_none() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## OpenAI-compatible endpoint (`/v1/chat/completions`)\n"
    );
    let _ = writeln!(s, "Streamed calls (`stream: true`, `stream_options.include_usage`) with each user's personal API key, one user message carrying the same directive as the plain scenario, against the same fake upstream; every call is stored as a new conversation of the key's owner, budgeted like any turn. TTFT = request sent → first chunk with content. Added = through the server − direct to the fake upstream (the baseline sampled concurrently in each phase, as for every scenario).\n");
    if let Some(v1) = v1 {
        let _ = writeln!(s, "| route | saturation turns/s (at concurrency) | max turns/s seen | half-load rate/s | TTFT p50 / p95 / p99 ms | added TTFT p50 / p95 / p99 ms | server CPU ms/turn | xact commits/turn | errors at half load |\n|---|---|---|---|---|---|---|---|---|");
        if let Some(n) = native {
            row(s, "native `POST /api/conversations/{id}/messages`", n);
        }
        row(s, "`POST /v1/chat/completions`", v1);
        let h = v1.half.as_ref();
        let p50 = h.and_then(|h| h.added_ttft_p50_ms);
        let p99 = h.and_then(|h| h.added_ttft_p99_ms);
        let _ = writeln!(s, "\n| target | measured | verdict |\n|---|---|---|");
        let _ = writeln!(
            s,
            "| `/v1` added TTFT p50 ≤ 1.5 ms at half of saturation | {} ms | {} |",
            f(p50, 2),
            verdict(p50.map(|x| x <= 1.5))
        );
        let _ = writeln!(
            s,
            "| `/v1` added TTFT p99 ≤ 5 ms at half of saturation | {} ms | {} |",
            f(p99, 2),
            verdict(p99.map(|x| x <= 5.0))
        );
        let theirs = native.and_then(|n| n.saturation_per_s);
        let ours = v1.saturation_per_s;
        // Throughput differs by a few % from step to step on a shared machine: within 5 %
        // counts as equal.
        let _ = writeln!(
            s,
            "| `/v1` turns/s ≥ the native route's (saturation, same run; 5 % tolerance) | {} vs {} turns/s | {} |",
            f(ours, 0),
            f(theirs, 0),
            verdict(ours.zip(theirs).map(|(a, b)| a >= b * 0.95))
        );
        let levels: Vec<String> = v1
            .sweep
            .iter()
            .map(|p| {
                let other = native
                    .and_then(|n| n.sweep.iter().find(|q| q.concurrency == p.concurrency))
                    .map(|q| format!("{:.0}", q.throughput_per_s))
                    .unwrap_or("–".into());
                format!(
                    "{}: {:.0} vs {other}",
                    p.concurrency.unwrap_or(0),
                    p.throughput_per_s
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "\nTurns/s per closed-model concurrency level, `/v1` vs native: {}.",
            levels.join("; ")
        );
    }
    let (Some(plain), Some(tool)) = (&r.commit_probe_v1, &r.commit_probe_v1_tool) else {
        return;
    };
    let _ = writeln!(s, "\n### Commits per `/v1` turn\n");
    let _ = writeln!(s, "The commit probe of the native turns above, through `/v1/chat/completions` (each call also stores its conversation and the request's messages: those belong in the same first commit).\n");
    let _ = writeln!(s, "| turns | n | holding / completed | before / after the first text token | total | raw before / after |\n|---|---|---|---|---|---|");
    probe_row(s, "`/v1` plain", plain);
    probe_row(s, "`/v1` tool (1 tool step)", tool);
    let extra = total(tool).zip(total(plain)).map(|(t, p)| t - p);
    let _ = writeln!(s, "\n| target | measured | verdict |\n|---|---|---|");
    let _ = writeln!(
        s,
        "| `/v1` plain: 1 commit before the first token, 1 after | {} / {} | {} |",
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
        "| `/v1` tool turns: at most one more commit per tool step | {} more | {} |",
        f(extra, 2),
        verdict(extra.map(|x| x <= 1.05))
    );
}
