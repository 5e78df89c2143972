//! The `run` command line: every option with its default (smoke or full) and its bounds.

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub smoke: bool,
    pub out_dir: PathBuf,
    pub server_bin: PathBuf,
    pub results_md: Option<PathBuf>,
    pub users: usize,
    pub levels: Vec<usize>,
    pub step_secs: f64,
    pub open_secs: f64,
    /// Fixed open-model rate instead of half of saturation (same-rate before/after runs).
    pub open_rate: Option<f64>,
    pub streams: Vec<usize>,
    pub stream_cycles: usize,
    pub p99_bound_ms: f64,
    pub ttft_ms: u64,
    pub deltas: u32,
    pub gap_ms: u64,
    pub stats_wait_secs: u64,
    pub direct_rate: f64,
    /// Earlier messages (1 KiB each) every conversation starts with: long conversations.
    pub history: usize,
    pub pg_host: String,
    pub pg_port: String,
    pub command: String,
    /// `--scenarios` keys ([`crate::scenarios::SCENARIOS`]); empty: all.
    pub scenarios: Vec<String>,
    /// Turn starts fired at one instant in the burst phase (0: no burst).
    pub burst: usize,
    /// `--soak S`: instead of the benchmark, `soak_streams` streams for S seconds.
    pub soak_secs: Option<u64>,
    pub soak_streams: usize,
    /// `--soak-rotate N`: a soak worker moves to a new conversation every N turns (0: never).
    pub soak_rotate: u64,
    /// `--held N`: instead of the benchmark, hold N streams open at once with the server's
    /// demo model in slow mode (no upstream socket per stream; see `held.rs`).
    pub held: usize,
    pub held_rate: f64,
    /// `--demo-delay-ms`: the demo model's wait before each word in the held run.
    pub demo_delay_ms: u64,
    /// `--search`: instead of the benchmark, only the full-text search phase (`search.rs`);
    /// a smoke run includes a small one.
    pub search: bool,
    /// `--search-own N` / `--search-others N`: the searcher's messages and everyone else's.
    pub search_own: usize,
    pub search_others: usize,
    /// `--search-secs S`: each of the search phase's two parts.
    pub search_secs: f64,
    /// `--interp`: instead of the benchmark, only the code interpreter phase (`interp.rs`).
    pub interp: bool,
    /// `--interp-runs N`: runs one at a time (against as many bare Python starts).
    pub interp_runs: usize,
    /// `--interp-secs S`: the bystander alone, and the saturated loops beside it.
    pub interp_secs: f64,
    /// `--knowledge`: instead of the benchmark, only the knowledge scenarios (`knowledge/`),
    /// on a server of their own on the pgvector cluster; a smoke run includes small ones.
    pub knowledge: bool,
    /// `--knowledge-files N`: files the ingestion scenario uploads.
    pub knowledge_files: usize,
    /// `--knowledge-max-kib K`: the largest of them (sizes from 3 KiB to K, log-uniform).
    pub knowledge_max_kib: usize,
    /// `--knowledge-chunks N`: chunks seeded with SQL for the search scenario.
    pub knowledge_chunks: usize,
    /// `--knowledge-users N`: users searching at once, each owning a collection.
    pub knowledge_users: usize,
    /// `--knowledge-secs S`: each search phase (and its baseline) lasts at most this long...
    pub knowledge_secs: f64,
    /// `--knowledge-requests N`: ...and sends at most this many requests.
    pub knowledge_requests: usize,
    /// `--knowledge-upstream`/`--no-knowledge-upstream`: also ingest through the fake
    /// upstream's `/v1/embeddings` (a second server, fresh database).
    pub knowledge_upstream: bool,
    /// `--embed-delay-ms MS`: the fake `/v1/embeddings` waits this long per request.
    pub embed_delay_ms: u64,
    /// `--pgvector-url URL` (or `AGENTCHAT_PGVECTOR_URL`): a Postgres with pgvector; unset:
    /// the one `tests/pgvector/start.sh` starts (and prints).
    pub pgvector_url: Option<String>,
    /// `--keep-db`: do not drop the test databases (to look at plans afterwards).
    pub keep_db: bool,
    /// `--compare PATH`: the stored result to report this run beside (`none`: no comparison).
    /// Unset, a full run compares with the results file it is about to replace.
    pub compare: Option<PathBuf>,
}

fn list(v: &str) -> anyhow::Result<Vec<usize>> {
    v.split(',')
        .map(|x| x.trim().parse::<usize>().context("bad list"))
        .collect()
}

impl Config {
    /// The stored result this run is reported beside, if any (see [`Config::compare`]).
    pub fn compare_with(&self) -> Option<PathBuf> {
        match &self.compare {
            Some(p) if p.as_os_str() == "none" => None,
            Some(p) => Some(p.clone()),
            None if self.smoke => None,
            None => self
                .results_md
                .as_ref()
                .map(|md| md.with_extension("json"))
                .filter(|json| json.exists()),
        }
    }

    /// Whether the catalogue scenario runs (a benchmark run that selects it): only then does
    /// the server get a model catalogue instead of the legacy `[llm]` settings.
    pub fn catalogue(&self) -> bool {
        self.held == 0
            && self.soak_secs.is_none()
            && !self.search
            && !self.interp
            && !self.knowledge
            && (self.scenarios.is_empty()
                || self.scenarios.iter().any(|k| k == crate::catalogue::KEY))
    }

    /// Whether the image scenario runs: then the server's catalogue also has a model that
    /// reads images ([`crate::image`]), and every user uploads the photo once.
    pub fn images(&self) -> bool {
        self.held == 0
            && self.soak_secs.is_none()
            && !self.search
            && !self.interp
            && !self.knowledge
            && (self.scenarios.is_empty() || self.scenarios.iter().any(|k| k == crate::image::KEY))
    }

    pub fn from_args(args: &[String]) -> anyhow::Result<Self> {
        let smoke = args.iter().any(|a| a == "--smoke");
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = here.join("../..");
        let server_bin = std::env::var_os("AGENTCHAT_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let rel = root.join("target/release/agentchat");
                if rel.exists() {
                    rel
                } else {
                    root.join("target/debug/agentchat")
                }
            });
        let mut c = Config {
            smoke,
            out_dir: here.join(if smoke { "out/smoke" } else { "out/full" }),
            server_bin,
            results_md: None,
            users: if smoke { 3 } else { 20 },
            levels: if smoke {
                vec![4]
            } else {
                vec![8, 32, 48, 64, 96, 128, 256]
            },
            step_secs: if smoke { 2.0 } else { 8.0 },
            open_secs: if smoke { 2.0 } else { 10.0 },
            open_rate: None,
            streams: if smoke {
                vec![20, 50]
            } else {
                vec![1000, 5000]
            },
            stream_cycles: if smoke { 1 } else { 2 },
            p99_bound_ms: 100.0,
            ttft_ms: 20,
            deltas: 20,
            gap_ms: 5,
            stats_wait_secs: if smoke { 0 } else { 11 },
            direct_rate: if smoke { 10.0 } else { 20.0 },
            history: 0,
            pg_host: "127.0.0.1".into(),
            pg_port: "5432".into(),
            command: String::new(),
            scenarios: Vec::new(),
            burst: if smoke { 200 } else { 10_000 },
            soak_secs: None,
            soak_streams: 200,
            soak_rotate: 10,
            held: 0,
            held_rate: 500.0,
            demo_delay_ms: 2000,
            search: false,
            search_own: if smoke { 1_000 } else { 10_000 },
            search_others: if smoke { 10_000 } else { 1_000_000 },
            search_secs: if smoke { 2.0 } else { 15.0 },
            interp: false,
            interp_runs: if smoke { 5 } else { 40 },
            interp_secs: if smoke { 2.0 } else { 20.0 },
            knowledge: false,
            knowledge_files: if smoke { 3 } else { 200 },
            knowledge_max_kib: if smoke { 24 } else { 100 },
            knowledge_chunks: if smoke { 2_000 } else { 100_000 },
            knowledge_users: if smoke { 4 } else { 50 },
            knowledge_secs: if smoke { 2.0 } else { 15.0 },
            knowledge_requests: if smoke { 200 } else { 50_000 },
            knowledge_upstream: true,
            embed_delay_ms: 0,
            pgvector_url: std::env::var("AGENTCHAT_PGVECTOR_URL")
                .ok()
                .map(|u| u.trim().to_owned())
                .filter(|u| !u.is_empty()),
            keep_db: false,
            compare: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut val = || it.next().cloned().context(format!("{a} needs a value"));
            match a.as_str() {
                "--smoke" => {}
                "--out" => c.out_dir = val()?.into(),
                "--server-bin" => c.server_bin = val()?.into(),
                "--results-md" => c.results_md = Some(val()?.into()),
                "--users" => c.users = val()?.parse()?,
                "--levels" => c.levels = list(&val()?)?,
                "--step-secs" => c.step_secs = val()?.parse()?,
                "--open-secs" => c.open_secs = val()?.parse()?,
                "--open-rate" => c.open_rate = Some(val()?.parse()?),
                "--streams" => c.streams = list(&val()?)?,
                "--stream-cycles" => c.stream_cycles = val()?.parse()?,
                "--p99-bound-ms" => c.p99_bound_ms = val()?.parse()?,
                "--ttft-ms" => c.ttft_ms = val()?.parse()?,
                "--deltas" => c.deltas = val()?.parse()?,
                "--gap-ms" => c.gap_ms = val()?.parse()?,
                "--stats-wait-secs" => c.stats_wait_secs = val()?.parse()?,
                "--direct-rate" => c.direct_rate = val()?.parse()?,
                "--history" => c.history = val()?.parse()?,
                "--command" => c.command = val()?,
                "--scenarios" => {
                    c.scenarios = val()?.split(',').map(|k| k.trim().to_owned()).collect()
                }
                "--burst" => c.burst = val()?.parse()?,
                "--soak" => c.soak_secs = Some(val()?.parse()?),
                "--soak-streams" => c.soak_streams = val()?.parse()?,
                "--soak-rotate" => c.soak_rotate = val()?.parse()?,
                "--held" => c.held = val()?.parse()?,
                "--held-rate" => c.held_rate = val()?.parse()?,
                "--demo-delay-ms" => c.demo_delay_ms = val()?.parse()?,
                "--search" => c.search = true,
                "--search-own" => c.search_own = val()?.parse()?,
                "--search-others" => c.search_others = val()?.parse()?,
                "--search-secs" => c.search_secs = val()?.parse()?,
                "--interp" => c.interp = true,
                "--interp-runs" => c.interp_runs = val()?.parse()?,
                "--interp-secs" => c.interp_secs = val()?.parse()?,
                "--knowledge" => c.knowledge = true,
                "--knowledge-files" => c.knowledge_files = val()?.parse()?,
                "--knowledge-max-kib" => c.knowledge_max_kib = val()?.parse()?,
                "--knowledge-chunks" => c.knowledge_chunks = val()?.parse()?,
                "--knowledge-users" => c.knowledge_users = val()?.parse()?,
                "--knowledge-secs" => c.knowledge_secs = val()?.parse()?,
                "--knowledge-requests" => c.knowledge_requests = val()?.parse()?,
                "--knowledge-upstream" => c.knowledge_upstream = true,
                "--no-knowledge-upstream" => c.knowledge_upstream = false,
                "--embed-delay-ms" => c.embed_delay_ms = val()?.parse()?,
                "--pgvector-url" => c.pgvector_url = Some(val()?),
                "--keep-db" => c.keep_db = true,
                "--compare" => c.compare = Some(val()?.into()),
                // Another Postgres on 127.0.0.1 (one with pg_stat_statements, for a profile).
                "--pg-port" => c.pg_port = val()?,
                other => bail!("unknown option {other}"),
            }
        }
        c.users = c.users.clamp(1, 1000);
        c.streams.sort_unstable();
        anyhow::ensure!(
            c.streams.iter().all(|n| *n <= 20_000),
            "at most 20000 open streams"
        );
        anyhow::ensure!(
            c.levels.iter().all(|n| *n >= 1 && *n <= 2000),
            "levels must be 1..=2000"
        );
        anyhow::ensure!(
            c.step_secs <= 600.0 && c.open_secs <= 600.0,
            "phases are at most 600 s"
        );
        c.stream_cycles = c.stream_cycles.clamp(1, 5);
        anyhow::ensure!(c.history <= 10_000, "at most 10000 history messages");
        crate::scenarios::select(&c.scenarios)?;
        // The image scenario is reported against the plain turn of the same run.
        if c.scenarios.iter().any(|k| k == crate::image::KEY)
            && !c.scenarios.iter().any(|k| k == "plain")
        {
            c.scenarios.insert(0, "plain".into());
        }
        anyhow::ensure!(c.burst <= 20_000, "at most 20000 starts in a burst");
        anyhow::ensure!(
            c.soak_secs.is_none_or(|s| (1..=86_400).contains(&s)),
            "a soak lasts 1 s to a day"
        );
        anyhow::ensure!(
            (1..=5000).contains(&c.soak_streams),
            "--soak-streams must be 1..=5000"
        );
        anyhow::ensure!(c.held <= 20_000, "at most 20000 held streams");
        anyhow::ensure!(
            (1.0..=10_000.0).contains(&c.held_rate),
            "--held-rate must be 1..=10000 starts/s"
        );
        anyhow::ensure!(
            (1..=5000).contains(&c.demo_delay_ms),
            "--demo-delay-ms must be 1..=5000 (the server's range)"
        );
        anyhow::ensure!(
            c.held == 0 || c.soak_secs.is_none(),
            "--held and --soak are separate runs"
        );
        anyhow::ensure!(
            (100..=1_000_000).contains(&c.search_own) && c.search_others <= 10_000_000,
            "--search-own must be 100..=1000000, --search-others at most 10000000"
        );
        anyhow::ensure!(
            (0.5..=600.0).contains(&c.search_secs),
            "--search-secs must be 0.5..=600"
        );
        anyhow::ensure!(
            (1..=10_000).contains(&c.interp_runs) && (0.5..=600.0).contains(&c.interp_secs),
            "--interp-runs must be 1..=10000, --interp-secs 0.5..=600"
        );
        anyhow::ensure!(
            (1..=1000).contains(&c.knowledge_files) && (4..=10_240).contains(&c.knowledge_max_kib),
            "--knowledge-files must be 1..=1000 (a collection's limit), --knowledge-max-kib 4..=10240"
        );
        anyhow::ensure!(
            (100..=5_000_000).contains(&c.knowledge_chunks),
            "--knowledge-chunks must be 100..=5000000"
        );
        anyhow::ensure!(
            (2..=500).contains(&c.knowledge_users),
            "--knowledge-users must be 2..=500"
        );
        anyhow::ensure!(
            (0.5..=600.0).contains(&c.knowledge_secs)
                && (1..=10_000_000).contains(&c.knowledge_requests),
            "--knowledge-secs must be 0.5..=600, --knowledge-requests 1..=10000000"
        );
        anyhow::ensure!(
            c.embed_delay_ms <= 10_000,
            "--embed-delay-ms must be at most 10000"
        );
        anyhow::ensure!(
            !c.knowledge || (c.held == 0 && c.soak_secs.is_none() && !c.search && !c.interp),
            "--knowledge is a run of its own (not with --held, --soak, --search or --interp)"
        );
        Ok(c)
    }
}
