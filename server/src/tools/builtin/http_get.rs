//! `http_get`: fetch a public web page or text resource.
//!
//! SSRF protection lives in [`crate::tools::net`]: the URL (and every
//! redirect target) is checked by [`UrlGuard`], and names are resolved by
//! [`GuardedResolver`], which refuses hosts with any non-public address.
//! Proxies are disabled so the checked address is the one connected to.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use url::Url;

use crate::tools::html_text::html_to_text;
use crate::tools::net::{find_blocked, redirect_policy, GuardedResolver, HttpToolConfig, UrlGuard};
use crate::tools::{args_schema, parse_args, truncate_chars, Tool, ToolContext, ToolError};

/// Bytes inspected when sniffing a response without a content type.
const SNIFF_BYTES: usize = 8 * 1024;
/// Longest error text forwarded from the HTTP stack.
const MAX_ERROR_CHARS: usize = 300;

/// Arguments of `http_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpGetArgs {
    /// Absolute http:// or https:// URL of a public web page or text resource.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Download at most this many bytes (capped by the server's limit).
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
}

/// How a response body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Html,
    Text,
    Binary,
}

/// Per-user site rules a fetch must pass (a role's web search domain lists): checked on the
/// URL asked for and on the final URL after redirects.
#[async_trait]
pub trait FetchRules: Send + Sync + std::fmt::Debug {
    /// Why `user` may not fetch `url` (`None`: they may).
    async fn refuses(&self, user: uuid::Uuid, url: &Url) -> Option<String>;
}

/// Fetches a URL and returns its readable text.
#[derive(Debug, Clone)]
pub struct HttpGet {
    config: HttpToolConfig,
    guard: Arc<UrlGuard>,
    client: Result<reqwest::Client, String>,
    rules: Option<Arc<dyn FetchRules>>,
}

impl HttpGet {
    /// Build the tool and its HTTP client from `config`.
    pub fn new(config: &HttpToolConfig) -> Self {
        let guard = Arc::new(UrlGuard::new(config));
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver))
            .redirect(redirect_policy(Arc::clone(&guard), config.max_redirects))
            .referer(false)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("AgentChat-http_get/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the http_get client");
                e.to_string()
            });
        Self {
            config: config.clone(),
            guard,
            client,
            rules: None,
        }
    }

    /// With per-user site rules on every fetch.
    pub fn with_rules(mut self, rules: Option<Arc<dyn FetchRules>>) -> Self {
        self.rules = rules;
        self
    }

    async fn check_rules(&self, ctx: &ToolContext, url: &Url) -> Result<(), ToolError> {
        match &self.rules {
            Some(rules) => match rules.refuses(ctx.user_id, url).await {
                Some(why) => Err(ToolError::NotPermitted(why)),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    async fn fetch(
        &self,
        ctx: &ToolContext,
        url: Url,
        max_bytes: usize,
    ) -> Result<Value, ToolError> {
        let client = self
            .client
            .as_ref()
            .map_err(|_| ToolError::Failed("the HTTP client is unavailable".to_owned()))?;
        let mut response = client.get(url).send().await.map_err(map_error)?;
        // A redirect may have left the role's sites: nothing of that page is returned.
        self.check_rules(ctx, response.url()).await?;
        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let declared = classify(content_type.as_deref());
        if declared == Some(BodyKind::Binary) {
            return Err(not_text(content_type.as_deref()));
        }
        let mut body: Vec<u8> = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(map_error)? {
            let room = max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        drop(response);
        let kind = match declared {
            Some(kind) => kind,
            None => sniff(&body),
        };
        if kind == BodyKind::Binary {
            return Err(not_text(content_type.as_deref()));
        }
        let decoded = decode(&body, content_type.as_deref());
        let mut text = match kind {
            BodyKind::Html => html_to_text(&decoded),
            _ => decoded,
        };
        if text.len() > self.config.max_text_bytes {
            let mut end = self.config.max_text_bytes;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            truncated = true;
        }
        Ok(json!({
            "status": status,
            "content_type": content_type,
            "url": final_url,
            "text": text,
            "truncated": truncated,
        }))
    }
}

#[async_trait]
impl Tool for HttpGet {
    fn name(&self) -> &str {
        "http_get"
    }

    fn description(&self) -> &str {
        "Fetch a public http(s) URL and return its status, content type, \
         final URL (after redirects) and text. HTML is reduced to readable \
         text; binary content is refused. Large responses are cut \
         (`truncated` is true). Local and private network addresses cannot \
         be fetched."
    }

    fn timeout(&self) -> Duration {
        self.config.timeout + Duration::from_secs(5)
    }

    fn parameters(&self) -> Value {
        args_schema::<HttpGetArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: HttpGetArgs = parse_args(args)?;
        let url = Url::parse(args.url.trim()).map_err(|e| {
            ToolError::InvalidArguments(format!("url: not a valid absolute URL ({e})"))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArguments(format!(
                "url: only http and https URLs are supported, not '{}'",
                truncate_chars(url.scheme(), 20)
            )));
        }
        self.guard
            .check_url(&url)
            .map_err(|b| ToolError::NotPermitted(b.0))?;
        self.check_rules(ctx, &url).await?;
        let max_bytes = args
            .max_bytes
            .map_or(self.config.max_bytes, |m| {
                usize::try_from(m).unwrap_or(usize::MAX)
            })
            .clamp(1, self.config.max_bytes.max(1));
        match tokio::time::timeout(self.config.timeout, self.fetch(ctx, url, max_bytes)).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(self.config.timeout)),
        }
    }
}

fn timed_out(after: Duration) -> ToolError {
    ToolError::Failed(format!("the request timed out after {after:?}"))
}

fn not_text(content_type: Option<&str>) -> ToolError {
    ToolError::Failed(format!(
        "not a text response (content type: {})",
        truncate_chars(content_type.unwrap_or("unknown"), 100)
    ))
}

/// Blocked hosts become `NotPermitted`; everything else `Failed` with the
/// error chain (which never contains response bodies).
fn map_error(err: reqwest::Error) -> ToolError {
    if let Some(blocked) = find_blocked(&err) {
        return ToolError::NotPermitted(blocked.0.clone());
    }
    if err.is_timeout() {
        return ToolError::Failed("the request timed out".to_owned());
    }
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    ToolError::Failed(format!(
        "request failed: {}",
        truncate_chars(&message, MAX_ERROR_CHARS)
    ))
}

/// The body kind for a `Content-Type`; `None` if absent (sniff instead).
fn classify(content_type: Option<&str>) -> Option<BodyKind> {
    let mime = content_type?
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    Some(match mime.as_str() {
        "" => return None,
        "text/html" | "application/xhtml+xml" => BodyKind::Html,
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
            BodyKind::Text
        }
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-javascript"
        | "application/ecmascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/csv"
        | "application/x-ndjson"
        | "application/sql"
        | "application/graphql" => BodyKind::Text,
        _ => BodyKind::Binary,
    })
}

/// Guess the kind of an untyped body: NUL bytes or invalid UTF-8 mean binary.
fn sniff(body: &[u8]) -> BodyKind {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let valid = match std::str::from_utf8(head) {
        Ok(_) => true,
        // Only an incomplete sequence at the very end is acceptable.
        Err(e) => e.error_len().is_none(),
    };
    if !valid || head.contains(&0) {
        return BodyKind::Binary;
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(512)])
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        BodyKind::Html
    } else {
        BodyKind::Text
    }
}

/// Decode `body` as UTF-8 (default) or Latin-1 when the charset says so.
/// A multi-byte character cut by the size cap is dropped, not garbled.
fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let charset = content_type
        .and_then(|ct| {
            ct.split(';')
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
                .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase())
        })
        .unwrap_or_default();
    if matches!(
        charset.as_str(),
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252"
    ) {
        return body.iter().map(|&b| char::from(b)).collect();
    }
    let end = match std::str::from_utf8(body) {
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        _ => body.len(),
    };
    String::from_utf8_lossy(&body[..end]).into_owned()
}

#[cfg(test)]
#[path = "http_get_tests.rs"]
mod tests;
