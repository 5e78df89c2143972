//! The report's section on the model catalogue scenario, side by side with plain chat of the
//! same run, and what makes the kit fail there.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::bench::{Report, ScenarioResult};
use crate::catalogue::{MODELS, NAME};
use crate::report_extra::verdict;
use crate::stats::{f, sub};

/// Model calls per fake upstream and model id over every phase of the scenario.
fn calls(sc: &ScenarioResult) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for p in sc.sweep.iter().chain(&sc.half) {
        for (k, v) in p.upstream_calls.iter().flatten() {
            *out.entry(k.clone()).or_insert(0) += v;
        }
    }
    out
}

/// The key [`crate::catalogue::upstream_calls`] gives model `i`'s calls (provider `a` is on
/// the first fake upstream, `b` on the second).
fn key(i: usize) -> String {
    format!("upstream {}: {}", i + 1, MODELS[i].2)
}

fn row(s: &mut String, label: &str, sc: &ScenarioResult) {
    let h = sc.half.clone().unwrap_or_default();
    let _ = writeln!(
        s,
        "| {label} | {} (at {}) | {:.0} | {} | {} / {} / {} | {} / {} | {} / {} / {} | {} | {} | {} |",
        f(sc.saturation_per_s, 0),
        sc.saturation_level
            .map(|c| c.to_string())
            .unwrap_or("–".into()),
        sc.max_throughput_per_s,
        f(h.rate_per_s, 0),
        f(h.ttft.p50_ms, 2),
        f(h.ttft.p95_ms, 2),
        f(h.ttft.p99_ms, 2),
        f(h.direct_ttft.p50_ms, 2),
        f(h.direct_ttft.p99_ms, 2),
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

/// What makes the kit fail: catalogue turns that reached neither provider, or a model that
/// the budget never charged.
pub fn failures(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let Some(sc) = r.scenarios.iter().find(|x| x.name == NAME) else {
        return out;
    };
    let c = calls(sc);
    for (i, m) in MODELS.iter().enumerate() {
        if c.get(&key(i)).copied().unwrap_or(0) == 0 {
            out.push(format!(
                "catalogue: no call of {} reached provider {} (fake upstream {} as {})",
                m.0,
                m.1,
                i + 1,
                m.2
            ));
        }
    }
    match &r.catalogue_usage {
        None => out.push("catalogue: the usage ledger was not read".into()),
        Some(u) if u.error.is_some() => out.push(format!(
            "catalogue: the usage ledger could not be read ({})",
            u.error.as_deref().unwrap_or("?")
        )),
        Some(u) => {
            for m in MODELS {
                match u.of(m.0) {
                    Some(x) if x.charged_tokens > 0 && x.unpriced_calls == 0 => {}
                    Some(x) => out.push(format!(
                        "catalogue: {} calls of {} charged {} tokens to the budget, {} without a cost",
                        x.calls, m.0, x.charged_tokens, x.unpriced_calls
                    )),
                    None => out.push(format!("catalogue: no usage row for {}", m.0)),
                }
            }
        }
    }
    out
}

pub fn markdown(r: &Report, s: &mut String) {
    let Some(cat) = r.scenarios.iter().find(|x| x.name == NAME) else {
        return;
    };
    let plain = r.scenarios.iter().find(|x| x.name == "plain chat");
    let _ = writeln!(s, "\n## Model catalogue (two providers)\n");
    let [(a, pa, ua), (b, pb, ub)] = MODELS;
    let _ = writeln!(s, "The server ran with a model catalogue (`AGENTCHAT_PROVIDERS`, `AGENTCHAT_MODELS`) instead of the `[llm]` provider: providers `default` and `{pa}` (kind openai) on the first fake upstream, `{pb}` on a second fake upstream (its own process); models `{}` on `default` (no price, the `[llm]` limits: what the legacy settings make of themselves, and the default, so every other scenario's conversations — created without a model — run on it as before), `{a}` on `{pa}` (upstream id `{ua}`, priced, falls back to `{b}`) and `{b}` on `{pb}` (upstream id `{ub}`, priced). The catalogue scenario's conversations were created with `model`, alternately `{a}` and `{b}`; its direct baseline alternates between the two fake upstreams. Same run, same server: the plain row is the baseline.\n", crate::catalogue::DEFAULT_MODEL);
    let _ = writeln!(s, "| scenario | saturation turns/s (at concurrency) | max turns/s seen | half-load rate/s | TTFT p50 / p95 / p99 ms | direct TTFT p50 / p99 ms | added TTFT p50 / p95 / p99 ms | server CPU ms/turn | xact commits/turn | errors at half load |\n|---|---|---|---|---|---|---|---|---|---|");
    if let Some(p) = plain {
        row(s, "plain chat (default model)", p);
    }
    row(s, &format!("catalogue (`{a}` / `{b}`)"), cat);

    let ch = cat.half.as_ref();
    let ph = plain.and_then(|p| p.half.as_ref());
    let d50 = sub(
        ch.and_then(|h| h.added_ttft_p50_ms),
        ph.and_then(|h| h.added_ttft_p50_ms),
    );
    let d99 = sub(
        ch.and_then(|h| h.added_ttft_p99_ms),
        ph.and_then(|h| h.added_ttft_p99_ms),
    );
    let cpu = ch
        .and_then(|h| h.server_cpu_ms_per_turn)
        .zip(ph.and_then(|h| h.server_cpu_ms_per_turn));
    let tol50 = ph
        .and_then(|h| h.added_ttft_p50_ms)
        .map(|x| (x.abs() * 0.25).max(1.0));
    let _ = writeln!(
        s,
        "\n| comparison (catalogue − plain, same run) | measured | verdict |\n|---|---|---|"
    );
    let _ = writeln!(
        s,
        "| added TTFT p50 at half load, within noise (≤ plain's + max(1 ms, 25 %): {} ms) | {} ms | {} |",
        f(tol50, 2),
        f(d50, 2),
        verdict(d50.zip(tol50).map(|(d, t)| d <= t))
    );
    let _ = writeln!(
        s,
        "| added TTFT p99 at half load (not judged: p99 moves by tens of ms between runs here) | {} ms | – |",
        f(d99, 2)
    );
    let _ = writeln!(
        s,
        "| server CPU ms/turn at half load (ratio; ≤ 1.10) | {} | {} |",
        f(cpu.map(|(c, p)| c / p.max(1e-9)), 2),
        verdict(cpu.map(|(c, p)| c <= p * 1.10))
    );
    let levels: Vec<String> = cat
        .sweep
        .iter()
        .map(|p| {
            let other = plain
                .and_then(|n| n.sweep.iter().find(|q| q.concurrency == p.concurrency))
                .map(|q| {
                    format!(
                        "{:.0} turns/s, TTFT p50 {} ms",
                        q.throughput_per_s,
                        f(q.ttft.p50_ms, 1)
                    )
                })
                .unwrap_or("–".into());
            format!(
                "{}: {:.0} turns/s, TTFT p50 {} ms vs {other}",
                p.concurrency.unwrap_or(0),
                p.throughput_per_s,
                f(p.ttft.p50_ms, 1)
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "\nPer closed-model concurrency level, catalogue vs plain: {}.",
        levels.join("; ")
    );

    let c = calls(cat);
    let shown: Vec<String> = c.iter().map(|(k, v)| format!("{k} × {v}")).collect();
    let _ = writeln!(s, "\nModel calls the fake upstreams served during the catalogue phases, by the model id the request named (`fake`: the direct baseline): {}.", if shown.is_empty() { "none".to_owned() } else { shown.join(", ") });

    let Some(u) = &r.catalogue_usage else {
        return;
    };
    if let Some(e) = &u.error {
        let _ = writeln!(s, "\nThe usage ledger could not be read: {e}.");
        return;
    }
    let _ = writeln!(s, "\nThe usage ledger at the end of the run (every phase and the warm-up; `usage_records`): tokens charged to the budget and cost at the model's price.\n");
    let _ = writeln!(
        s,
        "| model | model calls | tokens charged to the budget | cost | unpriced calls |\n|---|---|---|---|---|"
    );
    for m in &u.models {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} {} | {} |",
            m.model, m.calls, m.charged_tokens, m.cost, m.currency, m.unpriced_calls
        );
    }
    let _ = writeln!(
        s,
        "\nRoles: {}. Left reserved at the end: {} tokens, {} holds.",
        u.roles.join("; "),
        u.reserved_left,
        u.holds_left
    );
}
