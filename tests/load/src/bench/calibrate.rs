//! The machine's speed, measured in the same phase as the server: the fake upstream's CPU per
//! model call it served. The fake upstream does the same work per call whatever the build
//! under test (parse a request, stream the same deltas over loopback), so its cost per call
//! moves only with the machine: a neighbour on the host, the CPU's clock, the caches. CPU per
//! turn divided by it ("in upstream calls") is what a build costs with the machine's speed
//! taken out. On the shared 2-core hosts a build's CPU per turn at c=128 ranged by a quarter
//! to a third within one sitting, and by at most 4 % in upstream calls (`PROFILE.md`).
//!
//! It is a ratio, not a time. It biases a little against the faster build: more turns per
//! second batch more of the fake upstream's writes into each wake-up, so its cost per call
//! falls and the ratio rises.

use super::{Ctx, Phase};
use crate::sys;

/// The fake upstream's CPU and the model calls it had served, at one instant.
pub(super) struct UpstreamMark {
    ticks: u64,
    served: u64,
}

/// The fake upstream's counters now (`None` if its process or its stats could not be read).
pub(super) async fn mark(ctx: &Ctx) -> Option<UpstreamMark> {
    let stats = super::ctx::upstream_stats(ctx).await?;
    Some(UpstreamMark {
        served: stats.get("served")?.as_u64()?,
        ticks: sys::cpu_ticks(ctx.fake_pid)?,
    })
}

/// Fills the phase's machine speed and its CPU per turn in upstream calls from the marks
/// taken around it. Fewer than 100 calls, or fewer than 10 ticks, say nothing.
pub(super) fn apply(p: &mut Phase, before: Option<UpstreamMark>, after: Option<UpstreamMark>) {
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    let calls = after.served.saturating_sub(before.served);
    let ticks = after.ticks.saturating_sub(before.ticks);
    if calls < 100 || ticks < 10 {
        return;
    }
    let us_per_call = ticks as f64 * 1_000_000.0 / sys::CLK_TCK / calls as f64;
    p.upstream_cpu_us_per_call = Some(us_per_call);
    let in_calls = |ms: Option<f64>| ms.map(|ms| ms * 1000.0 / us_per_call);
    p.server_cpu_in_calls = in_calls(p.server_cpu_ms_per_turn);
    p.pg_backend_cpu_in_calls = in_calls(p.pg_backend_cpu_ms_per_turn);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase() -> Phase {
        Phase {
            server_cpu_ms_per_turn: Some(1.2),
            pg_backend_cpu_ms_per_turn: Some(1.5),
            ..Default::default()
        }
    }

    #[test]
    fn a_turns_cpu_is_counted_in_the_upstreams_cost_per_call() {
        let mut p = phase();
        // 300 ticks (3 s) over 5,000 calls: 600 µs a call.
        let before = UpstreamMark {
            ticks: 1_000,
            served: 10_000,
        };
        let after = UpstreamMark {
            ticks: 1_300,
            served: 15_000,
        };
        apply(&mut p, Some(before), Some(after));
        let near = |a: Option<f64>, b: f64| (a.unwrap_or(f64::NAN) - b).abs() < 1e-9;
        assert!(near(p.upstream_cpu_us_per_call, 600.0));
        assert!(near(p.server_cpu_in_calls, 2.0));
        assert!(near(p.pg_backend_cpu_in_calls, 2.5));
    }

    #[test]
    fn too_few_calls_or_ticks_say_nothing() {
        for (ticks, served) in [(1_300, 10_050), (1_005, 15_000)] {
            let mut p = phase();
            let before = UpstreamMark {
                ticks: 1_000,
                served: 10_000,
            };
            apply(&mut p, Some(before), Some(UpstreamMark { ticks, served }));
            assert_eq!(p.upstream_cpu_us_per_call, None);
            assert_eq!(p.server_cpu_in_calls, None);
        }
        let mut p = phase();
        apply(
            &mut p,
            None,
            Some(UpstreamMark {
                ticks: 9,
                served: 9,
            }),
        );
        assert_eq!(p.pg_backend_cpu_in_calls, None);
    }
}
