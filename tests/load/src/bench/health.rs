//! Kit health: whether the kit itself worked (turns completed in every scenario, baseline
//! requests answered, streams opened, probes completed), not whether the server is fast.

use super::Report;

/// What went wrong with the kit in this run; empty: the kit works.
pub(super) fn kit_failures(report: &Report) -> Vec<String> {
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
    failures.extend(crate::report_extra::failures(report));
    failures
}
