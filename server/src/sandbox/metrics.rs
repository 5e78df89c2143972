//! The code interpreter's Prometheus series, registered on the application's registry.

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry};

/// Every way a run ends, as the `outcome` label.
pub const OUTCOMES: [&str; 8] = [
    "ok",
    "error",
    "timeout",
    "memory",
    "processes",
    "output",
    "busy",
    "denied",
];

/// Seconds, from 10 ms to 5 min.
const SECONDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Bytes, from 8 MiB to 8 GiB.
const BYTES: &[f64] = &[
    8e6, 16e6, 32e6, 64e6, 128e6, 256e6, 512e6, 1024e6, 2048e6, 4096e6, 8192e6,
];

/// Cheap to clone: the handles share their series.
#[derive(Clone)]
pub struct SandboxMetrics {
    pub runs: IntCounterVec,
    pub duration: Histogram,
    pub queue_wait: Histogram,
    pub max_rss: Histogram,
}

impl SandboxMetrics {
    pub fn register(r: &Registry) -> prometheus::Result<Self> {
        let runs = IntCounterVec::new(
            Opts::new(
                "agentchat_sandbox_runs_total",
                "Code interpreter runs by how they ended",
            ),
            &["outcome"],
        )?;
        r.register(Box::new(runs.clone()))?;
        for outcome in OUTCOMES {
            runs.with_label_values(&[outcome]);
        }
        let histogram = |name: &str, help: &str, buckets: &[f64]| {
            let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))?;
            r.register(Box::new(h.clone()))?;
            Ok::<_, prometheus::Error>(h)
        };
        Ok(Self {
            runs,
            duration: histogram(
                "agentchat_sandbox_duration_seconds",
                "Wall time of one code interpreter run",
                SECONDS,
            )?,
            queue_wait: histogram(
                "agentchat_sandbox_queue_wait_seconds",
                "Time a run waited for a free slot",
                SECONDS,
            )?,
            max_rss: histogram(
                "agentchat_sandbox_max_rss_bytes",
                "Peak memory of one run",
                BYTES,
            )?,
        })
    }
}
