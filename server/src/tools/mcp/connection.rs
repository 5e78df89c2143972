//! Opening one session with an MCP server over stdio or Streamable HTTP, with rmcp. The
//! lifecycle is negotiated: `server/discover` for the stateless 2026-07-28 revision first,
//! falling back to the `initialize` handshake (2025-11-25, or whatever older version the
//! server answers with, such as 2025-06-18).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{
    serve_client_with_lifecycle_and_ct, ClientCacheConfig, ClientLifecycleMode,
    NotificationContext, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::config::McpServerConfig;
use super::http_client::HeaderLiftingClient;
use super::limits::McpLimits;

/// A live session.
pub type Session = RunningService<RoleClient, Handler>;

/// Our side of the session: tells the supervisor when the server's tool list changed.
pub struct Handler {
    tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentchat", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }
}

/// Opens a session; the caller bounds it with a timeout. `cancel` ends the session later.
pub async fn connect(
    config: &McpServerConfig,
    limits: &McpLimits,
    tools_changed: Arc<Notify>,
    cancel: CancellationToken,
) -> Result<Session, String> {
    let handler = Handler { tools_changed };
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let session = if let Some(command) = &config.command {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(&config.args).envs(&config.env).kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start `{command}`: {e}"))?;
        if let Some(stderr) = stderr {
            forward_stderr(config.name.clone(), stderr);
        }
        serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, cancel).await
    } else {
        let url = config.url.clone().unwrap_or_default();
        let mut headers = HashMap::new();
        for (k, v) in &config.headers {
            let name = reqwest013::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("header `{k}` is not a valid header name"))?;
            let value = reqwest013::header::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of header `{k}` is not valid"))?;
            headers.insert(name, value);
        }
        let client = reqwest013::Client::builder()
            .no_proxy()
            .connect_timeout(config.timeout())
            .tcp_nodelay(true)
            .user_agent(concat!("AgentChat-mcp/", env!("CARGO_PKG_VERSION")))
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(
            HeaderLiftingClient::new(client),
            StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(headers)
                .max_json_response_size(limits.max_message_bytes)
                .max_sse_event_size(limits.max_message_bytes),
        );
        serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, cancel).await
    }
    .map_err(|e| describe_init_error(&e))?;
    // Tool lists are re-read on notifications and refreshes: never answer them from a cache.
    session
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    Ok(session)
}

fn describe_init_error(e: &rmcp::service::ClientInitializeError) -> String {
    let text = e.to_string();
    crate::tools::truncate_chars(&text, 300)
}

/// A stdio server's stderr goes to our log, line by line, tagged with the server's name.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(mcp_server = %server, line = %crate::tools::truncate_chars(&line, 500), "mcp server stderr");
        }
    });
}

/// Redirects are followed only within the configured origin: the secret headers and the
/// per-user identity token (which reqwest would carry along) never leave it. A redirect
/// elsewhere ends the request with the 3xx, which the connection reports as an error.
fn same_origin_redirects() -> reqwest013::redirect::Policy {
    reqwest013::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(|u| u.origin());
        if attempt.previous().len() >= 5 {
            attempt.error("too many redirects")
        } else if first.is_some_and(|o| o == attempt.url().origin()) {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}
