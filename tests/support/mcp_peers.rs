//! Real MCP servers for the tests, installed by `tests/mcp/install.sh` (which `.ci/run` runs):
//! PyPI's `mcp-server-time` (stdio), npm's `@modelcontextprotocol/server-everything`
//! (Streamable HTTP) and the suite's own `agentchat_test_server.py` (official `mcp` SDK).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use agentchat::tools::mcp::McpServerConfig;
use serde_json::Value;

use crate::TestApp;

/// Where the installed peers live.
#[derive(Debug, Clone)]
pub struct Peers {
    pub dir: PathBuf,
}

impl Peers {
    /// The installed peers; installs them first if needed. `None` (after saying why, loudly)
    /// only when they cannot be installed here.
    pub fn get() -> Option<Peers> {
        static PEERS: OnceLock<Result<Peers, String>> = OnceLock::new();
        let result = PEERS.get_or_init(|| {
            let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp");
            let out = std::process::Command::new("bash")
                .arg(dir.join("install.sh"))
                .output()
                .map_err(|e| format!("running tests/mcp/install.sh: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "tests/mcp/install.sh failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(Peers { dir })
        });
        match result {
            Ok(p) => Some(p.clone()),
            Err(why) => {
                eprintln!("SKIPPED: the MCP test peers could not be installed: {why}");
                None
            }
        }
    }

    fn python(&self) -> String {
        self.dir.join(".venv/bin/python").display().to_string()
    }

    /// `mcp-server-time` over stdio, as server `name`.
    pub fn time(&self, name: &str) -> McpServerConfig {
        let mut c = McpServerConfig::http(name, "http://unused/");
        c.url = None;
        c.command = Some(
            self.dir
                .join(".venv/bin/mcp-server-time")
                .display()
                .to_string(),
        );
        c.args = vec!["--local-timezone".into(), "UTC".into()];
        c.timeout_ms = 15_000;
        c
    }

    /// Our own server over stdio.
    pub fn own_stdio(&self, name: &str, extra: &[&str]) -> McpServerConfig {
        let mut c = McpServerConfig::http(name, "http://unused/");
        c.url = None;
        c.command = Some(self.python());
        c.args = vec![self
            .dir
            .join("agentchat_test_server.py")
            .display()
            .to_string()];
        c.args.extend(extra.iter().map(|s| (*s).to_owned()));
        c.timeout_ms = 15_000;
        c
    }

    /// Starts our own server over Streamable HTTP; its URL.
    pub async fn own_http(&self, args: &[String]) -> (Child, String) {
        let port = free_port();
        let mut cmd = tokio::process::Command::new(self.python());
        cmd.arg(self.dir.join("agentchat_test_server.py"))
            .arg("--http")
            .arg(port.to_string())
            .args(args);
        let child = Child::spawn(cmd);
        let url = format!("http://127.0.0.1:{port}/mcp");
        wait_for_port(port).await;
        (child, url)
    }

    /// Starts server-everything over Streamable HTTP; its URL.
    pub async fn everything(&self) -> (Child, String) {
        let port = free_port();
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(
            self.dir
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        )
        .arg("streamableHttp")
        .env("PORT", port.to_string());
        let child = Child::spawn(cmd);
        wait_for_port(port).await;
        (child, format!("http://127.0.0.1:{port}/mcp"))
    }
}

/// A peer process, killed when dropped.
pub struct Child(pub tokio::process::Child);

impl Child {
    fn spawn(mut cmd: tokio::process::Command) -> Self {
        cmd.kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Child(cmd.spawn().expect("starting an MCP test peer"))
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for_port(port: u16) {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the MCP peer did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl TestApp {
    /// `GET /api/admin/mcp-servers/{name}` as `admin`.
    pub async fn mcp_server(&self, admin: &str, name: &str) -> Value {
        self.get_as(admin, &format!("/api/admin/mcp-servers/{name}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits until the server `name` is in `state` (and, when connected, lists `tool`).
    pub async fn wait_mcp(
        &self,
        admin: &str,
        name: &str,
        state: &str,
        tool: Option<&str>,
    ) -> Value {
        let started = Instant::now();
        loop {
            let s = self.mcp_server(admin, name).await;
            let has_tool = tool.is_none_or(|t| {
                s["tools"]
                    .as_array()
                    .is_some_and(|ts| ts.iter().any(|x| x["name"] == t))
            });
            if s["status"]["state"] == state && has_tool {
                return s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(40),
                "MCP server {name} never reached {state} with {tool:?}: {s}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
