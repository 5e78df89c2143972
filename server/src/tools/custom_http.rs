//! Admin-defined HTTP tools: a name, a parameter schema and an endpoint. Arguments fill
//! `{placeholders}` in the URL template (URL-encoded); the rest go in the query string
//! (GET, DELETE) or a JSON body. Header values are secrets kept server-side. The same SSRF
//! guard as `http_get` applies to every request and redirect.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use url::Url;

use super::net::{find_blocked, redirect_policy, GuardedResolver, HttpToolConfig, UrlGuard};
use super::{truncate_chars, Tool, ToolContext, ToolError};

/// The stored definition of a custom tool.
#[derive(Debug, Clone)]
pub struct CustomToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub method: String,
    pub url_template: String,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
}

/// A custom tool ready to call.
pub struct CustomHttpTool {
    def: CustomToolDef,
    guard: Arc<UrlGuard>,
    client: reqwest::Client,
    max_bytes: usize,
}

impl CustomHttpTool {
    pub fn new(def: CustomToolDef, http: &HttpToolConfig) -> Result<Self, String> {
        let guard = Arc::new(UrlGuard::new(http));
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver))
            .redirect(redirect_policy(Arc::clone(&guard), http.max_redirects))
            .referer(false)
            .timeout(def.timeout)
            .connect_timeout(def.timeout)
            .user_agent(concat!("AgentChat-custom-tool/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            def,
            guard,
            client,
            max_bytes: http.max_bytes,
        })
    }

    /// The URL with placeholders filled, and the arguments the template did not use.
    fn render(&self, args: &Map<String, Value>) -> Result<(Url, Map<String, Value>), ToolError> {
        let mut url = self.def.url_template.clone();
        let mut rest = args.clone();
        for (key, value) in args {
            let placeholder = format!("{{{key}}}");
            if url.contains(&placeholder) {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let encoded: String =
                    url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
                url = url.replace(&placeholder, &encoded);
                rest.remove(key);
            }
        }
        if url.contains('{') {
            return Err(ToolError::InvalidArguments(
                "the endpoint needs an argument that was not given".to_owned(),
            ));
        }
        let parsed = Url::parse(&url)
            .map_err(|e| ToolError::Failed(format!("the tool's URL is invalid: {e}")))?;
        Ok((parsed, rest))
    }
}

#[async_trait]
impl Tool for CustomHttpTool {
    fn name(&self) -> &str {
        &self.def.name
    }

    fn description(&self) -> &str {
        &self.def.description
    }

    fn parameters(&self) -> Value {
        self.def.parameters.clone()
    }

    fn timeout(&self) -> Duration {
        self.def.timeout
    }

    async fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let (mut url, rest) = self.render(&args)?;
        let method = reqwest::Method::from_bytes(self.def.method.as_bytes())
            .map_err(|_| ToolError::Failed("the tool's method is invalid".to_owned()))?;
        let sends_body = matches!(
            method,
            reqwest::Method::POST | reqwest::Method::PUT | reqwest::Method::PATCH
        );
        if !sends_body {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in &rest {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                pairs.append_pair(k, &text);
            }
        }
        self.guard
            .check_url(&url)
            .map_err(|b| ToolError::NotPermitted(b.0))?;
        let mut request = self.client.request(method, url.clone());
        for (k, v) in &self.def.headers {
            request = request.header(k, v);
        }
        if sends_body {
            request = request.json(&Value::Object(rest));
        }
        let response = request.send().await.map_err(map_error)?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        let mut truncated = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(map_error)?;
            let room = self.max_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let parsed = if truncated {
            Value::String(text)
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if !status.is_success() {
            let snippet = match &parsed {
                Value::String(s) => truncate_chars(s, 300),
                other => truncate_chars(&other.to_string(), 300),
            };
            return Err(ToolError::Failed(format!(
                "the endpoint answered {}: {snippet}",
                status.as_u16()
            )));
        }
        Ok(json!({
            "status": status.as_u16(),
            "content_type": content_type,
            "body": parsed,
            "truncated": truncated,
        }))
    }
}

fn map_error(err: reqwest::Error) -> ToolError {
    if let Some(blocked) = find_blocked(&err) {
        return ToolError::NotPermitted(blocked.0.clone());
    }
    if err.is_timeout() {
        return ToolError::Timeout;
    }
    ToolError::Failed(format!(
        "request failed: {}",
        truncate_chars(&err.to_string(), 300)
    ))
}
