//! Setup: the fake upstream, the kit's MCP server and the AgentChat server (on a fresh
//! database) started and waited for, and their teardown (`Procs` kills them and drops the
//! database on drop, whatever happens).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::time::Instant;

use super::{log, Config};
use crate::client::{self, Api};
use crate::sys;

/// Child processes and the database, torn down on drop whatever happens.
pub(crate) struct Procs {
    fake: Option<Child>,
    fake_b: Option<Child>,
    mcp: Option<Child>,
    server: Option<Child>,
    db: String,
    pg_host: String,
    pg_port: String,
    db_created: bool,
    /// `--keep-db`: leave the database for a look afterwards.
    keep_db: bool,
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in [
            self.server.take(),
            self.fake.take(),
            self.fake_b.take(),
            self.mcp.take(),
        ]
        .into_iter()
        .flatten()
        {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.db_created && self.keep_db {
            eprintln!(
                "[load] --keep-db: database {} left on {}:{}",
                self.db, self.pg_host, self.pg_port
            );
        } else if self.db_created {
            let r = sys::psql(
                &self.pg_host,
                &self.pg_port,
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db),
            );
            if let Err(e) = r {
                eprintln!("warning: could not drop {}: {e:#}", self.db);
            }
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos & 0xffff_ffff, std::process::id())
}

/// Starts `agentchat-load <sub>` (a loopback helper that prints `LISTENING <port>`).
async fn spawn_helper(sub: &str) -> anyhow::Result<(Child, u16)> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(&exe)
        .arg(sub)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {sub}"))?;
    let stdout = child.stdout.take().context("helper stdout")?;
    let what = sub.to_owned();
    let port = tokio::task::spawn_blocking(move || -> anyhow::Result<u16> {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        line.trim()
            .strip_prefix("LISTENING ")
            .with_context(|| format!("{what} did not start"))?
            .parse()
            .context("port")
    })
    .await??;
    Ok((child, port))
}

/// Waits (bounded) until the server has a session with the kit's MCP server.
pub(super) async fn wait_mcp_connected(api: &Api, admin: &str) -> anyhow::Result<()> {
    let by = Instant::now() + Duration::from_secs(30);
    loop {
        let v = api
            .http
            .get(format!("{}/api/admin/mcp-servers", api.base))
            .bearer_auth(admin)
            .timeout(Duration::from_secs(5))
            .send()
            .await?
            .json::<serde_json::Value>()
            .await?;
        let state = v
            .get("items")
            .and_then(|i| i.as_array())
            .and_then(|i| i.iter().find(|s| s["name"] == crate::mcp::SERVER_NAME))
            .map(|s| s["status"]["state"].as_str().unwrap_or("").to_owned());
        if state.as_deref() == Some("connected") {
            return Ok(());
        }
        if Instant::now() > by {
            bail!("the server did not connect to the kit's MCP server: {v}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What [`start`] leaves running, and how to reach it.
pub(crate) struct Started {
    pub(crate) procs: Procs,
    pub(crate) db: String,
    pub(crate) fake_pid: u32,
    pub(crate) fake_base: String,
    /// The second fake upstream, when the catalogue scenario runs (else the base is empty).
    pub(crate) fake_b_pid: Option<u32>,
    pub(crate) fake_b_base: String,
    pub(crate) mcp_pid: u32,
    pub(crate) mcp_base: String,
    pub(crate) server_pid: u32,
    pub(crate) api: Api,
}

/// Where a server of the kit keeps its data, and what else it is told.
pub(crate) struct Target {
    pub(crate) pg_host: String,
    pub(crate) pg_port: String,
    /// The server's log, in the run's output directory.
    pub(crate) log_name: String,
    /// Extra environment for the server (after the kit's own, so it may override them).
    pub(crate) env: Vec<(String, String)>,
}

/// Starts the helpers and the server, and waits (bounded) until the server is ready.
pub(super) async fn start(cfg: &Config) -> anyhow::Result<Started> {
    start_on(
        cfg,
        Target {
            pg_host: cfg.pg_host.clone(),
            pg_port: cfg.pg_port.clone(),
            log_name: "server.log".into(),
            env: Vec::new(),
        },
    )
    .await
}

/// [`start`] on the Postgres of `target` (the knowledge scenarios' pgvector cluster).
pub(crate) async fn start_on(cfg: &Config, target: Target) -> anyhow::Result<Started> {
    let db = format!("agentchat_load_{}", rand_suffix());
    let mut procs = Procs {
        fake: None,
        fake_b: None,
        mcp: None,
        server: None,
        db: db.clone(),
        pg_host: target.pg_host.clone(),
        pg_port: target.pg_port.clone(),
        db_created: false,
        keep_db: cfg.keep_db,
    };

    // Fake upstream and MCP server (own processes, so their CPU is not the generator's).
    let (fake, fake_port) = spawn_helper("fake-upstream").await?;
    let fake_pid = fake.id();
    procs.fake = Some(fake);
    let fake_base = format!("http://127.0.0.1:{fake_port}");
    log(format!("fake upstream on {fake_base}"));
    // A second one, provider `b` of the catalogue scenario (only when that scenario runs).
    let catalogue = cfg.catalogue();
    let (mut fake_b_pid, mut fake_b_base) = (None, String::new());
    if catalogue {
        let (fake_b, port) = spawn_helper("fake-upstream").await?;
        fake_b_pid = Some(fake_b.id());
        procs.fake_b = Some(fake_b);
        fake_b_base = format!("http://127.0.0.1:{port}");
        log(format!(
            "second fake upstream on {fake_b_base}; the server gets a model catalogue (3 providers)"
        ));
    }
    let (mcp_child, mcp_port) = spawn_helper("mcp-server").await?;
    let mcp_pid = mcp_child.id();
    procs.mcp = Some(mcp_child);
    let mcp_base = format!("http://127.0.0.1:{mcp_port}");
    let mcp_servers = serde_json::json!([{
        "name": crate::mcp::SERVER_NAME,
        "url": format!("{mcp_base}/agentchat/mcp"),
        "timeout_ms": 10_000,
    }]);
    log(format!("MCP server on {mcp_base}"));

    // The server, on a fresh database.
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let log_path = cfg.out_dir.join(&target.log_name);
    let server_log = std::fs::File::create(&log_path)?;
    let mut command = Command::new(&cfg.server_bin);
    if catalogue || cfg.images() {
        // `[[providers]]` + `[[models]]` (the `[llm]` provider is then not used; its limits
        // and `llm.model`, the default, still are). See `crate::catalogue`; the image
        // scenario adds its model that reads images (`crate::image`).
        command
            .env(
                "AGENTCHAT_PROVIDERS",
                crate::catalogue::providers_env(&fake_base, &fake_b_base),
            )
            .env(
                "AGENTCHAT_MODELS",
                crate::catalogue::models_env(catalogue, cfg.images()),
            );
    }
    let server = command
        .env(
            "DATABASE_URL",
            format!(
                "postgres://postgres@{}:{}/{db}",
                target.pg_host, target.pg_port
            ),
        )
        .env("AGENTCHAT_BIND", format!("127.0.0.1:{port}"))
        .env(
            "AGENTCHAT_LLM_PROVIDER",
            if cfg.held > 0 { "demo" } else { "openai" },
        )
        .env("AGENTCHAT_LLM_BASE_URL", format!("{fake_base}/v1"))
        .env(
            "AGENTCHAT_LLM_MODEL",
            if cfg.held > 0 {
                "demo"
            } else {
                crate::catalogue::DEFAULT_MODEL
            },
        )
        .env("AGENTCHAT_DEMO_DELAY_MS", cfg.demo_delay_ms.to_string())
        // One model call per turn, as the kit counts them (no background title calls); the
        // soak titles its new conversations, as a real chat does (titles compete with turns
        // for the pool and lock the conversation and the budget as turns do).
        .env(
            "AGENTCHAT_AUTO_TITLES",
            if cfg.soak_secs.is_some() {
                "true"
            } else {
                "false"
            },
        )
        .env(
            "AGENTCHAT_TURN_TIMEOUT_SECS",
            client::TURN_DEADLINE.as_secs().to_string(),
        )
        .env("AGENTCHAT_ACCESS_TOKEN_TTL_SECS", "86400")
        // The hold sweeper commits on every look (30 s by default), landing at random in the
        // commit probe's windows; once a day keeps the counts to the turns' own.
        .env("AGENTCHAT_HOLD_SWEEP_SECS", "86400")
        .env("AGENTCHAT_REGISTRATION", "open")
        .env("AGENTCHAT_MCP_SERVERS", mcp_servers.to_string())
        .env("AGENTCHAT_WORKSPACE_DIR", cfg.out_dir.join("workspaces"))
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .stdout(server_log.try_clone()?)
        .stderr(server_log)
        .spawn()
        .with_context(|| format!("starting {}", cfg.server_bin.display()))?;
    let server_pid = server.id();
    procs.server = Some(server);
    procs.db_created = true; // the server creates it; drop it in any case
    let http = client::http_client(20_000)?;
    let api = Api {
        http: http.clone(),
        base: base.clone(),
    };
    let ready_by = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = procs.server.as_mut() {
            if let Ok(Some(status)) = s.try_wait() {
                bail!(
                    "the server exited during start ({status}); see {}",
                    log_path.display()
                );
            }
        }
        let ok = http
            .get(format!("{base}/readyz"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .map(|r| r.status().is_success())
            .unwrap_or(false);
        if ok {
            break;
        }
        if Instant::now() > ready_by {
            bail!(
                "the server was not ready within 120 s; see {}",
                log_path.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    log(format!(
        "server pid {server_pid} ready on {base}, database {db}"
    ));
    Ok(Started {
        procs,
        db,
        fake_pid,
        fake_base,
        fake_b_pid,
        fake_b_base,
        mcp_pid,
        mcp_base,
        server_pid,
        api,
    })
}
