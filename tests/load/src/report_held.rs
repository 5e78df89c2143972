//! Report section for the held streams (`--held N`).

use std::fmt::Write;

use crate::bench::Report;
use crate::held::HeldSample;
use crate::stats::f;

fn row(s: &mut String, label: &str, x: &HeldSample) {
    let _ = writeln!(
        s,
        "| {label} | {} | {} | {} | {} | {} |",
        x.streaming,
        f(x.rss_mib, 1),
        x.fds.map(|v| v.to_string()).unwrap_or("–".into()),
        x.threads.map(|v| v.to_string()).unwrap_or("–".into()),
        f(x.active_streams_gauge, 0)
    );
}

pub fn markdown(r: &Report, s: &mut String) {
    let Some(h) = &r.held else { return };
    let _ = writeln!(s, "\n## Held streams: {} open at once\n", h.target);
    let _ = writeln!(
        s,
        "The server's demo model in slow mode ({} ms before each word, ~70 words a reply): a \
         stream holds one server descriptor (the client's socket) and no upstream socket. \
         {} starts launched at {}/s; {} streamed their first word within {:.1} s. Load \
         average after: `{}`.\n",
        h.demo_delay_ms, h.launched, h.rate_per_s, h.streaming, h.seconds_to_open, h.loadavg
    );
    let _ = writeln!(
        s,
        "| when | streaming | server RSS MiB | server fds | threads | `agentchat_active_streams` |\n|---|---|---|---|---|---|"
    );
    row(s, "idle", &h.idle);
    row(s, "all streaming", &h.at_target);
    row(s, "10 s later (still open)", &h.held);
    row(s, "after they ended", &h.after_close);
    let _ = writeln!(
        s,
        "\nPer stream: {} KiB of server RSS, {} server descriptors. Peak RSS {} MiB, peak \
         fds {}; generator fds at target {}. Headers p50 / p99 {} / {} ms; first word p50 / \
         p99 {} / {} ms. Completed {} of {}; errors {:?}. `/readyz`: {} of {} probes failed \
         (slowest {} ms); pool waiting ≤ {}.",
        f(h.kib_per_stream, 1),
        f(h.fds_per_stream, 3),
        f(h.peak_rss_mib, 1),
        h.peak_fds.map(|v| v.to_string()).unwrap_or("–".into()),
        h.generator_fds_at_target
            .map(|v| v.to_string())
            .unwrap_or("–".into()),
        f(h.headers.p50_ms, 0),
        f(h.headers.p99_ms, 0),
        f(h.ttft.p50_ms, 0),
        f(h.ttft.p99_ms, 0),
        h.completed,
        h.launched,
        h.errors,
        h.health.readyz_failures,
        h.health.readyz_probes,
        f(h.health.readyz_max_ms, 0),
        f(h.health.pool_waiting_max, 0),
    );
}
