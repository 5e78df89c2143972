//! How an MCP server is reached: the `[[mcp_servers]]` entries of the config file and the
//! HTTP servers admins add through the API share this one type.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default bound on one `tools/call` (and on connecting).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Longest accepted timeout (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Longest server name: `{server}__{tool}` must still leave room for the tool's name.
pub const MAX_SERVER_NAME_LEN: usize = 24;

/// One MCP server, from the config file or the admin API.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `^[a-z0-9-]{1,24}$`; its tools are named `{name}__{tool}`.
    pub name: String,
    /// Program to start (stdio transport). Only the config file may set it.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment of the started program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP endpoint (`http://` or `https://`).
    #[serde(default)]
    pub url: Option<String>,
    /// Sent with every HTTP request (secrets: never listed back).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Send a short-lived signed JWT naming the user with every request.
    #[serde(default)]
    pub forward_identity: bool,
}

fn yes() -> bool {
    true
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

impl std::fmt::Debug for McpServerConfig {
    // Header values and environment values may be credentials: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("enabled", &self.enabled)
            .field("timeout_ms", &self.timeout_ms)
            .field("forward_identity", &self.forward_identity)
            .finish()
    }
}

/// How the server is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    Stdio,
    Http,
}

impl TransportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
        }
    }
}

impl McpServerConfig {
    /// An HTTP server with the defaults (what the admin API starts from).
    pub fn http(name: &str, url: &str) -> Self {
        Self {
            name: name.to_owned(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: Some(url.to_owned()),
            headers: BTreeMap::new(),
            enabled: true,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            forward_identity: false,
        }
    }

    pub fn transport(&self) -> TransportKind {
        if self.command.is_some() {
            TransportKind::Stdio
        } else {
            TransportKind::Http
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Why this entry cannot be used, in words for the operator or the admin.
    pub fn validate(&self) -> Result<(), String> {
        if !valid_server_name(&self.name) {
            return Err(format!(
                "MCP server name `{}` must match ^[a-z0-9-]{{1,{MAX_SERVER_NAME_LEN}}}$",
                crate::tools::truncate_chars(&self.name, 40)
            ));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "MCP server `{}`: set either `command` (stdio) or `url` (HTTP), not both",
                    self.name
                ))
            }
            (None, None) => {
                return Err(format!(
                    "MCP server `{}` needs a `command` (stdio) or a `url` (Streamable HTTP)",
                    self.name
                ))
            }
            (Some(c), None) if c.trim().is_empty() => {
                return Err(format!("MCP server `{}`: `command` is empty", self.name))
            }
            (None, Some(u)) => {
                validate_url(u).map_err(|e| format!("MCP server `{}`: {e}", self.name))?
            }
            _ => {}
        }
        if self.command.is_none() && (!self.args.is_empty() || !self.env.is_empty()) {
            return Err(format!(
                "MCP server `{}`: `args` and `env` only apply to stdio servers",
                self.name
            ));
        }
        if self.url.is_none() && !self.headers.is_empty() {
            return Err(format!(
                "MCP server `{}`: `headers` only apply to HTTP servers",
                self.name
            ));
        }
        for (k, v) in &self.headers {
            let ok_name = reqwest013::header::HeaderName::from_bytes(k.as_bytes()).is_ok();
            let ok_value = reqwest013::header::HeaderValue::from_str(v).is_ok();
            if !ok_name || !ok_value {
                return Err(format!(
                    "MCP server `{}`: header `{}` is not a valid HTTP header",
                    self.name,
                    crate::tools::truncate_chars(k, 40)
                ));
            }
        }
        if self.timeout_ms == 0 || self.timeout_ms > MAX_TIMEOUT_MS {
            return Err(format!(
                "MCP server `{}`: timeout_ms must be 1 to {MAX_TIMEOUT_MS}",
                self.name
            ));
        }
        Ok(())
    }
}

/// `^[a-z0-9-]{1,24}$`.
pub fn valid_server_name(name: &str) -> bool {
    (1..=MAX_SERVER_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn validate_url(raw: &str) -> Result<(), String> {
    let url = url::Url::parse(raw).map_err(|_| "`url` is not a valid URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("`url` must be an http:// or https:// URL".to_owned());
    }
    Ok(())
}

/// Checks a whole list (names unique, each entry valid).
pub fn validate_all(servers: &[McpServerConfig]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for s in servers {
        s.validate()?;
        if !seen.insert(s.name.as_str()) {
            return Err(format!("MCP server `{}` is configured twice", s.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Vec<McpServerConfig> {
        #[derive(Deserialize)]
        struct File {
            mcp_servers: Vec<McpServerConfig>,
        }
        toml::from_str::<File>(toml_text).unwrap().mcp_servers
    }

    #[test]
    fn parses_both_transports_with_defaults() {
        let servers = parse(
            r#"
            [[mcp_servers]]
            name = "time"
            command = "uvx"
            args = ["mcp-server-time"]
            env = { TZ = "UTC" }

            [[mcp_servers]]
            name = "everything"
            url = "http://127.0.0.1:3001/mcp"
            headers = { Authorization = "Bearer s3cret" }
            timeout_ms = 5000
            forward_identity = true
            enabled = false
            "#,
        );
        assert_eq!(servers[0].transport(), TransportKind::Stdio);
        assert!(servers[0].enabled);
        assert_eq!(servers[0].timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(servers[1].transport(), TransportKind::Http);
        assert!(!servers[1].enabled && servers[1].forward_identity);
        validate_all(&servers).unwrap();
        let shown = format!("{:?}", servers[1]);
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn rejects_bad_entries() {
        let mut s = McpServerConfig::http("ok", "http://127.0.0.1:1/mcp");
        s.validate().unwrap();
        for bad in ["", "UPPER", "under_score", "a-very-long-name-that-goes-on"] {
            s.name = bad.to_owned();
            assert!(s.validate().is_err(), "{bad}");
        }
        s.name = "ok".into();
        s.url = Some("ftp://x".into());
        assert!(s.validate().unwrap_err().contains("http"));
        s.url = Some("http://x/mcp".into());
        s.command = Some("x".into());
        assert!(s.validate().unwrap_err().contains("not both"));
        s.command = None;
        s.timeout_ms = 0;
        assert!(s.validate().is_err());
        s.timeout_ms = 10;
        s.headers.insert("bad header".into(), "v".into());
        assert!(s.validate().unwrap_err().contains("header"));
        let twice = vec![
            McpServerConfig::http("a", "http://x/"),
            McpServerConfig::http("a", "http://y/"),
        ];
        assert!(validate_all(&twice).unwrap_err().contains("twice"));
    }
}
