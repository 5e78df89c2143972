//! The OpenAI-compatible route: personal API keys and streamed `/v1/chat/completions` turns.
//!
//! A `/v1` call is stateless for the client: it sends the whole conversation (here one user
//! message carrying the fake upstream's directive) and the server stores it as a new
//! conversation of the key's owner. The answer is `chat.completion.chunk` events ending in
//! `data: [DONE]`; server-side tool activity rides in the chunks' `agentchat` field.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::client::{us, Api, Outcome};

impl Api {
    /// Creates a personal API key for the signed-in user and answers its secret.
    pub async fn create_key(&self, token: &str, name: &str) -> anyhow::Result<String> {
        let resp = self
            .http
            .post(format!("{}/api/keys", self.base))
            .bearer_auth(token)
            .json(&json!({"name": name}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .context("create API key")?;
        let status = resp.status();
        let v: Value = resp.json().await.context("create API key: bad JSON")?;
        anyhow::ensure!(status.is_success(), "create API key: HTTP {status}: {v}");
        v.get("key")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .context("create API key: no key")
    }

    /// Runs one streamed `/v1/chat/completions` call, measured as [`Api::turn`] measures a
    /// native turn: TTFT to the first chunk with content (or a tool call, the server's in
    /// the `agentchat` field included), gaps between content chunks, done at `[DONE]` after
    /// a `stop` finish.
    pub async fn v1_turn(
        &self,
        key: &str,
        content: &str,
        start: Instant,
        timeout: Duration,
        opened: Option<Arc<AtomicU64>>,
    ) -> Outcome {
        let deadline = start + timeout;
        let body = json!({
            "model": "fake",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": content}],
        });
        let req = self
            .http
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(key)
            .json(&body)
            .send();
        let resp = match tokio::time::timeout_at(deadline, req).await {
            Err(_) => return fail(start, "timeout"),
            Ok(Err(e)) => return fail(start, crate::client::classify(&e)),
            Ok(Ok(r)) => r,
        };
        let headers_us = Some(us(Instant::now() - start));
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let mut o = fail(start, format!("http_{status}"));
            o.status = Some(status);
            o.headers_us = headers_us;
            return o;
        }
        let mut out = Outcome {
            headers_us,
            status: Some(status),
            ..Default::default()
        };
        let first = |out: &mut Outcome, now: Instant| {
            if out.ttft_us.is_none() {
                out.ttft_us = Some(us(now - start));
                if let Some(c) = &opened {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        };
        let mut stream = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::with_capacity(4096);
        let mut last_delta: Option<Instant> = None;
        let mut tool_call_at: Option<Instant> = None;
        let mut finish: Option<String> = None;
        let mut done = false;
        'read: loop {
            let next = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => {
                    out.error = Some("timeout".into());
                    break;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    out.error = Some(crate::client::classify(&e));
                    break;
                }
                Ok(Some(Ok(b))) => b,
            };
            let now = Instant::now();
            buf.extend_from_slice(&next);
            while let Some(end) = crate::client::find_event_end(&buf) {
                let block: Vec<u8> = buf.drain(..end.1).collect();
                let (_, data) = crate::client::parse_event(&block[..end.0]);
                if data.is_empty() {
                    continue;
                }
                if data == "[DONE]" {
                    done = true;
                    break 'read;
                }
                let Ok(chunk) = serde_json::from_str::<Value>(data) else {
                    out.error = Some("bad_chunk".into());
                    break 'read;
                };
                if let Some(code) = chunk.pointer("/error/code") {
                    out.error = Some(format!("event_error_{}", code.as_str().unwrap_or("?")));
                    break 'read;
                }
                let choice = chunk.pointer("/choices/0");
                let text = choice
                    .and_then(|c| c.pointer("/delta/content"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let event = chunk.pointer("/agentchat/type").and_then(Value::as_str);
                if !text.is_empty() {
                    first(&mut out, now);
                    if let Some(prev) = last_delta {
                        out.gaps_us.push(us(now - prev));
                    }
                    last_delta = Some(now);
                    out.deltas += 1;
                } else if choice
                    .and_then(|c| c.pointer("/delta/tool_calls"))
                    .is_some()
                    || event == Some("tool_call")
                {
                    first(&mut out, now);
                    out.tool_calls += 1;
                    tool_call_at.get_or_insert(now);
                    last_delta = None;
                } else if event == Some("tool_result") {
                    out.tool_results += 1;
                    if out.tool_us.is_none() {
                        out.tool_us = tool_call_at.map(|t| us(now - t));
                    }
                    last_delta = None;
                }
                if let Some(f) = choice
                    .and_then(|c| c.get("finish_reason"))
                    .and_then(Value::as_str)
                {
                    finish = Some(f.to_owned());
                }
            }
        }
        out.total_us = us(start.elapsed());
        if done && finish.as_deref() != Some("stop") && out.error.is_none() {
            out.error = Some(format!("finish_{}", finish.as_deref().unwrap_or("none")));
        }
        if !done && out.error.is_none() {
            out.error = Some("no_done".into());
        }
        out.ok = done && out.error.is_none();
        out
    }
}

fn fail(start: Instant, e: impl Into<String>) -> Outcome {
    Outcome {
        ok: false,
        error: Some(e.into()),
        total_us: us(start.elapsed()),
        ..Default::default()
    }
}

impl crate::bench::Ctx {
    /// One turn of `conv`'s user through `route` (a `/v1` call ignores the conversation: it
    /// makes its own; taking one from the pool still bounds the turns in flight alike).
    pub(crate) async fn run_turn(
        &self,
        route: crate::scenarios::Route,
        conv: &crate::bench::Conv,
        content: &str,
        start: Instant,
        timeout: Duration,
        opened: Option<Arc<AtomicU64>>,
    ) -> Outcome {
        match route {
            crate::scenarios::Route::Native | crate::scenarios::Route::Catalogue => {
                self.api
                    .turn(
                        &self.tokens[conv.user],
                        &conv.id,
                        content,
                        start,
                        timeout,
                        opened,
                    )
                    .await
            }
            crate::scenarios::Route::Image => {
                let path = self
                    .image
                    .as_ref()
                    .and_then(|i| i.paths.get(conv.user))
                    .map(String::as_str)
                    .unwrap_or_default();
                self.api
                    .turn_attaching(
                        &self.tokens[conv.user],
                        &conv.id,
                        content,
                        &[path],
                        start,
                        timeout,
                        opened,
                    )
                    .await
            }
            crate::scenarios::Route::V1 => {
                self.api
                    .v1_turn(&self.keys[conv.user], content, start, timeout, opened)
                    .await
            }
        }
    }
}
