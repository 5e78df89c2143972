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
        // With `--streams 0` no turn was held, so none can have completed.
        let held = st.points.iter().any(|p| p.open_streams > 0);
        if held && st.completed == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::streams::{StreamPoint, StreamsResult};

    fn streams(open_streams: usize, completed: usize) -> Report {
        Report {
            streams: Some(StreamsResult {
                points: vec![StreamPoint {
                    open_streams,
                    reached: open_streams,
                    ..StreamPoint::default()
                }],
                completed,
                ..StreamsResult::default()
            }),
            ..Report::default()
        }
    }

    #[test]
    fn held_streams_must_complete_but_no_streams_asked_for_is_not_a_failure() {
        let held = |r: &Report| {
            kit_failures(r)
                .iter()
                .any(|f| f.contains("no held turn completed"))
        };
        assert!(held(&streams(100, 0)));
        assert!(!held(&streams(100, 100)));
        assert!(!held(&streams(0, 0)));
    }
}
