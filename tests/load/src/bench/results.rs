//! The report's data (`Report`, `Machine`), the machine it ran on, and writing it out
//! (report.json, report.md, the `--results-md` copies, the markdown on stdout).

use serde::Serialize;

use super::streams::StreamsResult;
use super::{log, CommitProbe, Config, ScenarioResult};
use crate::sys;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_mib: u64,
    pub loadavg_start: String,
    pub loadavg_end: String,
    pub kernel: String,
    pub postgres_version: String,
    pub server_bin: String,
    pub open_files_limit: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub config: Option<Config>,
    pub machine: Machine,
    pub started_at_unix: u64,
    pub wall_secs: f64,
    pub setup_secs: f64,
    /// Whether Postgres was checkpointed before the measured phases, or why not.
    pub checkpoint_before: String,
    pub scenarios: Vec<ScenarioResult>,
    pub streams: Option<StreamsResult>,
    pub commit_probe: Option<CommitProbe>,
    /// The same probe over tool turns (one tool step).
    pub commit_probe_tool: Option<CommitProbe>,
    /// Both probes again through `/v1/chat/completions`.
    pub commit_probe_v1: Option<CommitProbe>,
    pub commit_probe_v1_tool: Option<CommitProbe>,
    pub burst: Option<crate::burst::BurstResult>,
    pub soak: Option<crate::soak::SoakResult>,
    pub held: Option<crate::held::HeldResult>,
    pub search: Option<crate::search::SearchResult>,
    pub interp: Option<crate::interp::InterpResult>,
    /// The knowledge scenarios (ingestion, search on pgvector), on a server of their own.
    pub knowledge: Option<crate::knowledge::KnowledgeResult>,
    /// The catalogue scenario: the usage ledger per model and the roles' budgets at the end.
    pub catalogue_usage: Option<crate::catalogue::CatalogueUsage>,
    /// The image scenario against the plain turn of the same run, and the photo's uploads.
    pub image: Option<crate::image::ImageResult>,
    pub mcp_server_cpu_ms: Option<f64>,
    pub fake_upstream_cpu_ms: Option<f64>,
    pub generator_cpu_ms: Option<f64>,
    pub kit_ok: bool,
    pub kit_failures: Vec<String>,
}

/// The machine and the software the run measures on.
pub(super) fn machine(cfg: &Config) -> Machine {
    Machine {
        nproc: sys::nproc(),
        cpu_model: sys::cpu_model(),
        mem_total_mib: sys::mem_total_mib(),
        loadavg_start: sys::loadavg(),
        loadavg_end: String::new(),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .into(),
        postgres_version: sys::psql(&cfg.pg_host, &cfg.pg_port, "SHOW server_version")
            .unwrap_or_else(|e| format!("? ({e})")),
        server_bin: cfg.server_bin.display().to_string(),
        open_files_limit: std::fs::read_to_string("/proc/self/limits")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .map(|l| {
                l.split_whitespace()
                    .skip(3)
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default(),
    }
}

/// Writes the report files and prints the markdown (after the processes are torn down).
pub(super) fn write(cfg: &Config, report: &Report) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(cfg.out_dir.join("report.json"), &json)?;
    let md = crate::report::markdown(report);
    std::fs::write(cfg.out_dir.join("report.md"), &md)?;
    if let Some(path) = &cfg.results_md {
        std::fs::write(path, &md)?;
        std::fs::write(path.with_extension("json"), &json)?;
    }
    println!("{md}");
    log(format!(
        "report: {}",
        cfg.out_dir.join("report.md").display()
    ));
    Ok(())
}
