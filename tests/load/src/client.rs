//! Talking to the real AgentChat API (and, for the baseline, directly to the fake upstream).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::time::Instant;

/// What one streamed turn looked like from the client.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub ok: bool,
    pub error: Option<String>,
    /// Scheduled start to the first model output (`text_delta` or `tool_call`), µs.
    pub ttft_us: Option<u64>,
    /// Gaps between consecutive `text_delta` events (nothing else in between), µs.
    pub gaps_us: Vec<u64>,
    pub total_us: u64,
    pub deltas: u32,
    pub tool_calls: u32,
    pub tool_results: u32,
    /// The first `tool_call` event to its `tool_result`, µs: the tool's run as the client
    /// sees it (the server sends the call just before running it).
    pub tool_us: Option<u64>,
    /// Request sent to the response headers, µs (admission: how long a start waited).
    pub headers_us: Option<u64>,
    /// The HTTP status when the server refused the turn.
    pub status: Option<u16>,
}

impl Outcome {
    fn fail(start: Instant, e: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(e.into()),
            total_us: us(start.elapsed()),
            ..Default::default()
        }
    }
}

pub fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// The server's turn deadline, set by the kit (`AGENTCHAT_TURN_TIMEOUT_SECS`): a queued
/// start may wait this long for its turn, so a burst's client waits as long for headers.
pub const TURN_DEADLINE: Duration = Duration::from_secs(600);

pub fn http_client(max_idle: usize) -> anyhow::Result<reqwest::Client> {
    http_client_connecting_within(max_idle, Duration::from_secs(10))
}

/// A client whose connects may take up to `connect_timeout`: in a burst of thousands the
/// kernel's accept queue fills and a connect waits for SYN retries, as a real client would.
pub fn http_client_connecting_within(
    max_idle: usize,
    connect_timeout: Duration,
) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(max_idle)
        // Below the server's 5 s keep-alive (actix's default): reusing a connection the server
        // is closing at that moment fails the request. It showed up as a handful of `request`
        // errors at the start of the second stream cycle, after the pool sat idle.
        .pool_idle_timeout(Duration::from_secs(4))
        .tcp_nodelay(true)
        .no_proxy()
        .http1_only()
        .connect_timeout(connect_timeout)
        .build()?)
}

#[derive(Clone)]
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
}

impl Api {
    async fn json(&self, rb: reqwest::RequestBuilder, what: &str) -> anyhow::Result<Value> {
        let resp = rb
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .with_context(|| what.to_owned())?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!(
                "{what}: HTTP {status}: {}",
                text.chars().take(300).collect::<String>()
            );
        }
        if text.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).with_context(|| format!("{what}: bad JSON"))
    }

    pub async fn register(&self, username: &str, password: &str) -> anyhow::Result<Value> {
        let rb = self
            .http
            .post(format!("{}/api/auth/register", self.base))
            .json(&json!({"username": username, "password": password}));
        self.json(rb, "register").await
    }

    pub async fn login(&self, username: &str, password: &str) -> anyhow::Result<String> {
        // Failed logins are throttled with Retry-After; retry a few times, bounded.
        let mut last = None;
        for _ in 0..5 {
            let rb = self
                .http
                .post(format!("{}/api/auth/login", self.base))
                .json(&json!({"username": username, "password": password}));
            match self.json(rb, "login").await {
                Ok(v) => {
                    return v
                        .get("access_token")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .context("login: no access_token");
                }
                Err(e) => {
                    last = Some(e);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("login failed")))
    }

    pub async fn create_conversation(&self, token: &str, title: &str) -> anyhow::Result<String> {
        self.create_conversation_on(token, title, None).await
    }

    /// Creates a conversation with no title of its own, so that the server titles it after
    /// its first answer (when titles are on).
    pub async fn create_untitled(&self, token: &str) -> anyhow::Result<String> {
        let rb = self
            .http
            .post(format!("{}/api/conversations", self.base))
            .bearer_auth(token)
            .json(&json!({}));
        let v = self.json(rb, "create conversation").await?;
        v.get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .context("conversation: no id")
    }

    /// Creates a conversation; with `model`, on that catalogue model (checked: the answer
    /// must name it).
    pub async fn create_conversation_on(
        &self,
        token: &str,
        title: &str,
        model: Option<&str>,
    ) -> anyhow::Result<String> {
        let body = match model {
            Some(m) => json!({"title": title, "model": m}),
            None => json!({"title": title}),
        };
        let rb = self
            .http
            .post(format!("{}/api/conversations", self.base))
            .bearer_auth(token)
            .json(&body);
        let v = self.json(rb, "create conversation").await?;
        if let Some(m) = model {
            let got = v.get("model").and_then(Value::as_str);
            anyhow::ensure!(
                got == Some(m),
                "create conversation on {m}: the server answered model {got:?}"
            );
        }
        v.get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .context("conversation: no id")
    }

    /// Gives a role a token budget (admin only), so every turn takes a real reservation.
    pub async fn set_role_budget(
        &self,
        admin_token: &str,
        role: &str,
        tokens: i64,
    ) -> anyhow::Result<()> {
        let mut tools = vec![
            "current_time".to_owned(),
            "calculator".to_owned(),
            format!("{}__*", crate::mcp::SERVER_NAME),
        ];
        // A build from before the code interpreter has no `run_python`: the kit still runs
        // against it, so a before/after is one command.
        if self.knows_tool(admin_token, "run_python").await? {
            tools.push("run_python".to_owned());
        }
        let rb = self
            .http
            .put(format!("{}/api/admin/roles/{role}", self.base))
            .bearer_auth(admin_token)
            .json(&json!({"tools": tools, "token_budget": tokens, "budget_period": "month"}));
        self.json(rb, "set role budget").await.map(|_| ())
    }

    /// Whether the server offers a tool of this name (`GET /api/admin/tools`).
    async fn knows_tool(&self, admin_token: &str, name: &str) -> anyhow::Result<bool> {
        let rb = self
            .http
            .get(format!("{}/api/admin/tools", self.base))
            .bearer_auth(admin_token);
        let tools = self.json(rb, "list tools").await?;
        Ok(tools.to_string().contains(&format!("\"{name}\"")))
    }

    /// `(username, id)` of every account (admin only; the kit makes at most 1,000).
    pub async fn users(&self, admin_token: &str) -> anyhow::Result<Vec<(String, String)>> {
        let rb = self
            .http
            .get(format!("{}/api/admin/users?limit=500", self.base))
            .bearer_auth(admin_token);
        let v = self.json(rb, "list users").await?;
        Ok(v.get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|u| {
                        Some((
                            u.get("username")?.as_str()?.to_owned(),
                            u.get("id")?.as_str()?.to_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Gives one account a token budget of its own (admin only).
    pub async fn set_user_budget(
        &self,
        admin_token: &str,
        user_id: &str,
        tokens: i64,
    ) -> anyhow::Result<()> {
        let rb = self
            .http
            .patch(format!("{}/api/admin/users/{user_id}", self.base))
            .bearer_auth(admin_token)
            .json(&json!({"token_budget": tokens}));
        self.json(rb, "set user budget").await.map(|_| ())
    }

    /// Runs one streamed turn. `opened` is bumped when the first model output arrives.
    pub async fn turn(
        &self,
        token: &str,
        conversation: &str,
        content: &str,
        start: Instant,
        timeout: Duration,
        opened: Option<Arc<AtomicU64>>,
    ) -> Outcome {
        self.turn_attaching(token, conversation, content, &[], start, timeout, opened)
            .await
    }

    /// [`Api::turn`] with a message attaching `files` (workspace paths).
    #[allow(clippy::too_many_arguments)]
    pub async fn turn_attaching(
        &self,
        token: &str,
        conversation: &str,
        content: &str,
        files: &[&str],
        start: Instant,
        timeout: Duration,
        opened: Option<Arc<AtomicU64>>,
    ) -> Outcome {
        let deadline = start + timeout;
        let body = match files {
            [] => json!({"content": content}),
            files => json!({"content": content, "attachments": files}),
        };
        let req = self
            .http
            .post(format!(
                "{}/api/conversations/{}/messages",
                self.base, conversation
            ))
            .bearer_auth(token)
            .header("accept", "text/event-stream")
            .json(&body)
            .send();
        let resp = match tokio::time::timeout_at(deadline, req).await {
            Err(_) => return Outcome::fail(start, "timeout"),
            Ok(Err(e)) => return Outcome::fail(start, classify(&e)),
            Ok(Ok(r)) => r,
        };
        let headers_at = Instant::now();
        if !resp.status().is_success() {
            let mut o = Outcome::fail(start, format!("http_{}", resp.status().as_u16()));
            o.status = Some(resp.status().as_u16());
            o.headers_us = Some(us(headers_at - start));
            return o;
        }
        let mut out = Outcome {
            headers_us: Some(us(headers_at - start)),
            status: Some(resp.status().as_u16()),
            ..Default::default()
        };
        let mut tool_call_at: Option<Instant> = None;
        let mut stream = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::with_capacity(4096);
        let mut last_delta: Option<Instant> = None;
        let mut done = false;
        'read: loop {
            let next = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => {
                    out.error = Some("timeout".into());
                    break;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    out.error = Some(classify(&e));
                    break;
                }
                Ok(Some(Ok(b))) => b,
            };
            let now = Instant::now();
            buf.extend_from_slice(&next);
            while let Some(end) = find_event_end(&buf) {
                let block: Vec<u8> = buf.drain(..end.1).collect();
                let block = &block[..end.0];
                let (name, data) = parse_event(block);
                match name {
                    "text_delta" => {
                        if out.ttft_us.is_none() {
                            out.ttft_us = Some(us(now - start));
                            if let Some(c) = &opened {
                                c.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        if let Some(prev) = last_delta {
                            out.gaps_us.push(us(now - prev));
                        }
                        last_delta = Some(now);
                        out.deltas += 1;
                    }
                    "tool_call" => {
                        if out.ttft_us.is_none() {
                            out.ttft_us = Some(us(now - start));
                            if let Some(c) = &opened {
                                c.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        out.tool_calls += 1;
                        tool_call_at.get_or_insert(now);
                        last_delta = None;
                    }
                    "tool_result" => {
                        out.tool_results += 1;
                        if out.tool_us.is_none() {
                            out.tool_us = tool_call_at.map(|t| us(now - t));
                        }
                        if !data.contains("\"success\":true") {
                            out.error = Some("tool_failed".into());
                        }
                        last_delta = None;
                    }
                    "done" => {
                        if !data.contains("\"finish_reason\":\"stop\"") {
                            out.error.get_or_insert_with(|| {
                                format!("finish_{}", field(data, "finish_reason").unwrap_or("?"))
                            });
                        }
                        done = true;
                        break 'read;
                    }
                    "error" => {
                        out.error = Some(format!(
                            "event_error_{}",
                            field(data, "code").unwrap_or("?")
                        ));
                        break 'read;
                    }
                    "" => {}
                    _ => last_delta = None,
                }
            }
        }
        out.total_us = us(start.elapsed());
        if !done && out.error.is_none() {
            out.error = Some("no_done".into());
        }
        out.ok = done && out.error.is_none();
        out
    }
}

/// Direct request(s) to the fake upstream (the baseline for "added" latency). With `tool`, it
/// makes the same two calls the server makes: the first answers a tool call (TTFT is measured
/// to it), the second, carrying the tool result, answers the text (gaps are measured there).
/// With `image` (a data URL), the user message carries it as an `image_url` part, as the
/// server sends an attached image.
pub async fn direct_turn(
    http: &reqwest::Client,
    fake_base: &str,
    content: &str,
    tool: bool,
    image: Option<&str>,
    start: Instant,
    timeout: Duration,
) -> Outcome {
    let deadline = start + timeout;
    let url = format!("{fake_base}/v1/chat/completions");
    let user = match image {
        None => json!({"role": "user", "content": content}),
        Some(data_url) => json!({"role": "user", "content": [
            {"type": "text", "text": content},
            {"type": "image_url", "image_url": {"url": data_url}},
        ]}),
    };
    let mut messages = vec![json!({"role": "system", "content": "baseline"}), user];
    let mut out = Outcome::default();
    let calls = if tool { 2 } else { 1 };
    for call in 0..calls {
        if call == 1 {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_load_1", "type": "function",
                "function": {"name": "calculator", "arguments": "{\"expression\":\"1+1\"}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": "call_load_1", "content": "{\"success\":true,\"data\":2}"}));
        }
        let body = json!({"model": "fake", "stream": true, "stream_options": {"include_usage": true}, "messages": messages});
        if let Err(e) = direct_call(http, &url, &body, start, deadline, &mut out).await {
            out.error = Some(e);
            break;
        }
    }
    out.total_us = us(start.elapsed());
    out.ok = out.error.is_none();
    out
}

async fn direct_call(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    start: Instant,
    deadline: Instant,
    out: &mut Outcome,
) -> Result<(), String> {
    let req = http.post(url).json(body).send();
    let resp = match tokio::time::timeout_at(deadline, req).await {
        Err(_) => return Err("timeout".into()),
        Ok(Err(e)) => return Err(classify(&e)),
        Ok(Ok(r)) => r,
    };
    if !resp.status().is_success() {
        return Err(format!("http_{}", resp.status().as_u16()));
    }
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut last: Option<Instant> = None;
    loop {
        let next = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Err("timeout".into()),
            Ok(None) => return Err("no_done".into()),
            Ok(Some(Err(e))) => return Err(classify(&e)),
            Ok(Some(Ok(b))) => b,
        };
        let now = Instant::now();
        buf.extend_from_slice(&next);
        while let Some(end) = find_event_end(&buf) {
            let block: Vec<u8> = buf.drain(..end.1).collect();
            let (_, data) = parse_event(&block[..end.0]);
            if data == "[DONE]" {
                return Ok(());
            }
            let is_text = data.contains("\"content\":\"");
            let is_tool = data.contains("\"tool_calls\"");
            if (is_text || is_tool) && out.ttft_us.is_none() {
                out.ttft_us = Some(us(now - start));
            }
            if is_tool {
                out.tool_calls += 1;
            }
            if is_text {
                if let Some(prev) = last {
                    out.gaps_us.push(us(now - prev));
                }
                last = Some(now);
                out.deltas += 1;
            }
        }
    }
}

pub(crate) fn classify(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        // A connect that the kernel gave up on (SYN retries) is a timeout too; say which.
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        match cause.downcast_ref::<std::io::Error>() {
            Some(io) if e.is_connect() => format!("timeout (connect: {})", io.kind()),
            Some(io) => format!("timeout ({})", io.kind()),
            None if e.is_connect() => "timeout (connect)".into(),
            None => "timeout".into(),
        }
    } else if e.is_connect() {
        "connect".into()
    } else if e.is_body() || e.is_decode() {
        "body".into()
    } else {
        "request".into()
    }
}

/// (end of the event's content, end including the blank-line separator).
pub(crate) fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < buf.len() {
        if buf[i] == b'\n' && buf[i + 1] == b'\n' {
            return Some((i, i + 2));
        }
        if i + 3 < buf.len() && &buf[i..i + 4] == b"\r\n\r\n" {
            return Some((i, i + 4));
        }
        i += 1;
    }
    None
}

pub(crate) fn parse_event(block: &[u8]) -> (&str, &str) {
    let text = std::str::from_utf8(block).unwrap_or("");
    let (mut name, mut data) = ("", "");
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            name = v.trim();
        } else if let Some(v) = line.strip_prefix("data:") {
            data = v.trim();
        }
    }
    if name.is_empty() && !data.is_empty() {
        name = "message";
    }
    (name, data)
}

fn field<'a>(data: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":\"");
    let start = data.find(&pat)? + pat.len();
    let end = data[start..].find('"')? + start;
    Some(&data[start..end])
}
