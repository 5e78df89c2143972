//! Admin-defined HTTP tools: a name, a parameter schema and an endpoint. Arguments fill
//! `{placeholders}` in the URL template (percent-encoded in the path, so an argument can
//! neither add a segment nor be a `.`/`..` segment; form-encoded in the query); the rest go
//! in the query string (GET, DELETE) or a JSON body. Header values are secrets kept
//! server-side and bound to the template's origin: a tool with headers follows no redirect
//! to another origin. The same SSRF guard as `http_get` applies to every request and redirect.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use url::Url;

use super::net::{find_blocked, Blocked, GuardedResolver, HttpToolConfig, UrlGuard};
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
            .redirect(redirect_policy(
                Arc::clone(&guard),
                http.max_redirects,
                !def.headers.is_empty(),
            ))
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
            let Some(at) = url.find(&placeholder) else {
                continue;
            };
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let in_query = url.find('?').is_some_and(|q| q < at);
            let encoded: String = if in_query {
                url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
            } else {
                encode_path_part(&text)
            };
            url = url.replace(&placeholder, &encoded);
            rest.remove(key);
        }
        if url.contains('{') {
            return Err(ToolError::InvalidArguments(
                "the endpoint needs an argument that was not given".to_owned(),
            ));
        }
        if has_dot_segment(&url) {
            return Err(ToolError::InvalidArguments(
                "an argument used in the URL path cannot be `.` or `..`".to_owned(),
            ));
        }
        let parsed = Url::parse(&url)
            .map_err(|e| ToolError::Failed(format!("the tool's URL is invalid: {e}")))?;
        Ok((parsed, rest))
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters (so `/`, `?`, `#`, `%`
/// and `\` in an argument stay inside its path segment).
fn encode_path_part(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether a path segment of `url` is one a URL parser resolves as `.` or `..`.
fn has_dot_segment(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    let path = after_scheme
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .split_once('/')
        .map_or("", |(_, p)| p);
    path.split('/').any(|seg| {
        let seg = seg.to_ascii_lowercase().replace("%2e", ".");
        seg == "." || seg == ".."
    })
}

/// The SSRF guard on every hop; with secret headers, also no hop to another origin
/// (reqwest strips only the standard credential headers on such redirects).
fn redirect_policy(
    guard: Arc<UrlGuard>,
    max: usize,
    same_origin: bool,
) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max {
            return attempt.error(format!("too many redirects (limit {max})"));
        }
        let origin = attempt.previous().first().map(Url::origin);
        if same_origin && origin.is_some_and(|o| o != attempt.url().origin()) {
            return attempt.error(Blocked(
                "redirect refused: the tool sends secret headers, which stay with its own origin"
                    .to_owned(),
            ));
        }
        match guard.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(blocked) => attempt.error(Blocked(format!("redirect refused: {}", blocked.0))),
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(template: &str) -> CustomHttpTool {
        let def = CustomToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
            method: "GET".into(),
            url_template: template.into(),
            headers: vec![],
            timeout: Duration::from_secs(1),
        };
        CustomHttpTool::new(def, &HttpToolConfig::default()).unwrap()
    }

    fn render(template: &str, args: Value) -> Result<String, ToolError> {
        let Value::Object(m) = args else { panic!() };
        tool(template).render(&m).map(|(u, _)| u.to_string())
    }

    #[test]
    fn path_arguments_stay_in_their_segment() {
        let t = "https://api.example.com/v1/items/{id}/detail?q={q}";
        assert_eq!(
            render(t, json!({"id": "a/b?c#d%e f", "q": "x y&z"})).unwrap(),
            "https://api.example.com/v1/items/a%2Fb%3Fc%23d%25e%20f/detail?q=x+y%26z"
        );
        for walk in ["..", ".", "%2e%2e", ".%2E"] {
            let r = render(t, json!({"id": walk, "q": ""}));
            let ok = r.as_ref().is_ok_and(|u| u.contains("/v1/items/"));
            assert!(
                ok || matches!(r, Err(ToolError::InvalidArguments(_))),
                "{walk}: {r:?}"
            );
            if let Ok(u) = r {
                assert!(
                    u.starts_with("https://api.example.com/v1/items/"),
                    "{walk}: {u}"
                );
            }
        }
        assert!(matches!(
            render(t, json!({"id": "..", "q": ""})),
            Err(ToolError::InvalidArguments(_))
        ));
        assert_eq!(
            render(t, json!({"id": "file.txt", "q": ".."})).unwrap(),
            "https://api.example.com/v1/items/file.txt/detail?q=.."
        );
    }
}
