//! A fast fake upstream speaking the OpenAI Chat Completions streaming format.
//!
//! `POST /v1/chat/completions` answers with SSE `data: {chat.completion.chunk}` lines, a
//! final usage chunk (`choices: []`), then `data: [DONE]`. How it answers is steered per
//! request by a directive in the LAST user message (so one fake serves every scenario and the
//! server under test forwards it untouched):
//!
//! `load:ttft=20,n=20,gap=5,tool=0,hold=0,size=6`
//!
//! * `ttft`  ms before the first delta
//! * `n`     number of content deltas
//! * `gap`   ms between deltas
//! * `tool`  1: the first model call of a turn answers with one `calculator` tool call
//!   (finish_reason `tool_calls`); the call after the tool result answers with text
//! * `mcp`   1 (with `tool=1`): the tool call is `loadkit__echo {"text": …}`, the kit's MCP
//!   server's tool, instead of `calculator`
//! * `hold`  >0: send ONE delta after `ttft`, then keep the stream open (a delta every `gap` ms)
//!   until `POST /control/release` or `hold` seconds have passed, then finish
//! * `size`  characters per delta
//!
//! A user message's `content` may be a string or OpenAI's array of parts (what a server
//! sends with images): the directive is read from its text parts, and every `image_url`
//! part is counted, with a digest of its URL ([`crate::fake_images`]), so the kit can tell that every
//! image that reached the model was the very file it uploaded once.
//!
//! Control: `POST /control/release` finishes all held streams; `GET /control/stats` reports
//! `{active, served, models, embeddings, images}` (`models`: requests served by the `model`
//! they named, so a kit running two instances behind two catalogue providers can tell which
//! model reached which; `embeddings`: `/v1/embeddings` requests and inputs; `images`:
//! `{parts, bytes, digests: {digest: parts}}`).
//!
//! `POST /v1/embeddings` (OpenAI's shape) answers every input with its `demo-embed` vector
//! (the server's built-in embedder, `crate::knowledge::corpus::demo_embed`), so a collection
//! embedded through it searches like one embedded by the server itself. The `model` steers
//! it: `embed:delay=20,dims=256` waits 20 ms before answering and makes 256-dimensional
//! vectors (the defaults are 0 and 256).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::fake_images::text_of;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Directive {
    pub ttft_ms: u64,
    pub n: u32,
    pub gap_ms: u64,
    pub tool: bool,
    /// The tool call goes to the kit's MCP server (`loadkit__echo`).
    pub mcp: bool,
    /// The tool call is the code interpreter's: `run_python` `print(1)`.
    pub py: bool,
    pub hold_s: u64,
    pub size: usize,
}

impl Default for Directive {
    fn default() -> Self {
        Self {
            ttft_ms: 20,
            n: 20,
            gap_ms: 5,
            tool: false,
            mcp: false,
            py: false,
            hold_s: 0,
            size: 6,
        }
    }
}

/// Longest a held stream may stay open, whatever the directive says.
const MAX_HOLD_S: u64 = 900;

impl Directive {
    pub fn render(&self) -> String {
        format!(
            "load:ttft={},n={},gap={},tool={},mcp={},py={},hold={},size={}",
            self.ttft_ms,
            self.n,
            self.gap_ms,
            self.tool as u8,
            self.mcp as u8,
            self.py as u8,
            self.hold_s,
            self.size
        )
    }

    pub fn parse(text: &str) -> Self {
        let mut d = Self::default();
        let Some(pos) = text.find("load:") else {
            return d;
        };
        let spec = text[pos + 5..].split_whitespace().next().unwrap_or("");
        for kv in spec.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Ok(v) = v.trim().parse::<u64>() else {
                continue;
            };
            match k.trim() {
                "ttft" => d.ttft_ms = v.min(60_000),
                "n" => d.n = v.min(100_000) as u32,
                "gap" => d.gap_ms = v.min(60_000),
                "tool" => d.tool = v != 0,
                "mcp" => d.mcp = v != 0,
                "py" => d.py = v != 0,
                "hold" => d.hold_s = v.min(MAX_HOLD_S),
                "size" => d.size = (v as usize).clamp(1, 4096),
                _ => {}
            }
        }
        d
    }
}

struct Shared {
    release: watch::Sender<u64>,
    active: AtomicU64,
    served: AtomicU64,
    /// Requests by the `model` they named (at most [`MAX_MODELS`] names, then `other`).
    by_model: Mutex<BTreeMap<String, u64>>,
    embed_requests: AtomicU64,
    embed_inputs: AtomicU64,
    images: crate::fake_images::Counter,
}

/// Most distinct model names `by_model` keeps.
const MAX_MODELS: usize = 64;

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, ctype: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", ctype.parse().expect("static header"));
    r
}

/// Binds `addr` (loopback only), prints `LISTENING <port>` on stdout, serves forever.
pub async fn serve(addr: std::net::SocketAddr) -> anyhow::Result<()> {
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the fake upstream only binds loopback addresses"
    );
    let listener = TcpListener::bind(addr).await?;
    let port = listener.local_addr()?.port();
    println!("LISTENING {port}");
    use std::io::Write;
    std::io::stdout().flush().ok();
    let (release, _) = watch::channel(0u64);
    let shared = Arc::new(Shared {
        release,
        active: AtomicU64::new(0),
        served: AtomicU64::new(0),
        by_model: Mutex::new(BTreeMap::new()),
        embed_requests: AtomicU64::new(0),
        embed_inputs: AtomicU64::new(0),
        images: Default::default(),
    });
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                eprintln!("fake upstream: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // LOAD_FAKE_NODELAY=0 leaves Nagle on (to show what a missing TCP_NODELAY costs).
        if std::env::var("LOAD_FAKE_NODELAY")
            .map(|v| v != "0")
            .unwrap_or(true)
        {
            let _ = stream.set_nodelay(true);
        }
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(req, shared.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    match (method, path.as_str()) {
        (Method::POST, "/v1/chat/completions") | (Method::POST, "/chat/completions") => {}
        (Method::POST, "/v1/embeddings") | (Method::POST, "/embeddings") => {
            return Ok(embeddings(req, &shared).await);
        }
        (Method::POST, "/control/release") => {
            shared.release.send_modify(|g| *g += 1);
            return Ok(full(
                StatusCode::OK,
                "application/json",
                r#"{"released":true}"#,
            ));
        }
        (Method::GET, "/control/stats") => {
            let models = shared
                .by_model
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default();
            let body = json!({
                "active": shared.active.load(Ordering::Relaxed),
                "served": shared.served.load(Ordering::Relaxed),
                "models": models,
                "embeddings": {
                    "requests": shared.embed_requests.load(Ordering::Relaxed),
                    "inputs": shared.embed_inputs.load(Ordering::Relaxed),
                },
                "images": shared.images.stats(),
            });
            return Ok(full(StatusCode::OK, "application/json", body.to_string()));
        }
        _ => {
            return Ok(full(
                StatusCode::NOT_FOUND,
                "application/json",
                r#"{"error":"not found"}"#,
            ))
        }
    }
    let bytes = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(full(StatusCode::BAD_REQUEST, "application/json", "{}")),
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => {
            return Ok(full(
                StatusCode::BAD_REQUEST,
                "application/json",
                r#"{"error":"bad json"}"#,
            ))
        }
    };
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let last_role = messages
        .last()
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let directive = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(|c| Directive::parse(&text_of(c)))
        .unwrap_or_default();
    shared.images.count(&messages);
    let answer_tool = directive.tool && last_role != "tool";
    let prompt_tokens = (bytes.len() / 4) as u64;

    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(16);
    let release = shared.release.subscribe();
    shared.served.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut m) = shared.by_model.lock() {
        let name = body.get("model").and_then(Value::as_str).unwrap_or("");
        if let Some(n) = m.get_mut(name) {
            *n += 1;
        } else if m.len() < MAX_MODELS {
            m.insert(name.to_owned(), 1);
        } else {
            *m.entry("other".to_owned()).or_insert(0) += 1;
        }
    }
    shared.active.fetch_add(1, Ordering::Relaxed);
    let s2 = shared.clone();
    tokio::spawn(async move {
        produce(tx, directive, answer_tool, prompt_tokens, release).await;
        s2.active.fetch_sub(1, Ordering::Relaxed);
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
    let mut resp = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    resp.headers_mut()
        .insert("content-type", "text/event-stream".parse().expect("static"));
    resp.headers_mut()
        .insert("cache-control", "no-cache".parse().expect("static"));
    Ok(resp)
}

/// `POST /v1/embeddings`: demo-embed vectors of the inputs (see the module's doc).
async fn embeddings(req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let bad = |m: &str| {
        full(
            StatusCode::BAD_REQUEST,
            "application/json",
            json!({"error": {"message": m}}).to_string(),
        )
    };
    let Ok(bytes) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return bad("unreadable body");
    };
    let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
        return bad("bad json");
    };
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => return bad("input must be a string or an array of strings"),
    };
    let model = body["model"].as_str().unwrap_or("");
    let (mut delay_ms, mut dims) = (0u64, crate::knowledge::corpus_dims());
    if let Some((_, spec)) = model.split_once(':') {
        for kv in spec.split(',') {
            match kv.split_once('=') {
                Some(("delay", v)) => delay_ms = v.trim().parse::<u64>().unwrap_or(0).min(60_000),
                Some(("dims", v)) => {
                    dims = v.trim().parse::<usize>().unwrap_or(dims).clamp(1, 4096)
                }
                _ => {}
            }
        }
    }
    shared.embed_requests.fetch_add(1, Ordering::Relaxed);
    shared
        .embed_inputs
        .fetch_add(inputs.len() as u64, Ordering::Relaxed);
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
    let tokens: usize = inputs.iter().map(|t| t.len().div_ceil(4)).sum();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"object": "embedding", "index": i,
                   "embedding": crate::knowledge::corpus::demo_embed(t, dims)})
        })
        .collect();
    let answer = json!({
        "object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    });
    full(StatusCode::OK, "application/json", answer.to_string())
}

fn chunk(delta: Value, finish: Option<&str>) -> Bytes {
    let v = json!({
        "id": "chatcmpl-load",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    Bytes::from(format!("data: {v}\n\n"))
}

/// Writes the SSE body. Returns early (silently) when the reader went away.
async fn produce(
    tx: mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
    d: Directive,
    answer_tool: bool,
    prompt_tokens: u64,
    mut release: watch::Receiver<u64>,
) {
    macro_rules! send {
        ($b:expr) => {
            if tx.send(Ok(Frame::data($b))).await.is_err() {
                return;
            }
        };
    }
    tokio::time::sleep(Duration::from_millis(d.ttft_ms)).await;
    if answer_tool {
        let (name, arguments) = if d.mcp {
            ("loadkit__echo", r#"{"text":"load"}"#)
        } else if d.py {
            ("run_python", r#"{"code":"print(1)"}"#)
        } else {
            ("calculator", r#"{"expression":"1+1"}"#)
        };
        send!(chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": "call_load_1", "type": "function",
                "function": {"name": name, "arguments": arguments}
            }]}),
            None
        ));
        send!(chunk(json!({}), Some("tool_calls")));
        send!(usage_chunk(prompt_tokens, 12));
        send!(Bytes::from_static(b"data: [DONE]\n\n"));
        return;
    }
    let word: String = "abcdefghijklmnopqrstuvwxyz "
        .chars()
        .cycle()
        .take(d.size)
        .collect();
    let mut sent = 0u64;
    if d.hold_s > 0 {
        release.borrow_and_update();
        send!(chunk(json!({"role": "assistant", "content": word}), None));
        sent += 1;
        let until = tokio::time::Instant::now() + Duration::from_secs(d.hold_s);
        let gap = Duration::from_millis(d.gap_ms.max(100));
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                r = release.changed() => { let _ = r; break; }
                _ = tokio::time::sleep(gap) => {
                    send!(chunk(json!({"content": word}), None));
                    sent += 1;
                }
            }
        }
    } else {
        // The deltas keep a schedule (the k-th `k × gap` after the first) rather than
        // sleeping `gap` after each: every sleep rounds up to the timer's next millisecond,
        // which stretched 5 ms gaps to ~6.3 ms, a 32-delta turn by ~40 ms, and the closed
        // loop's ceiling at 128 clients from ~620 turns/s to ~530 whatever the server did.
        let first = tokio::time::Instant::now();
        for i in 0..d.n {
            if i > 0 && d.gap_ms > 0 {
                let due = first + Duration::from_millis(d.gap_ms * u64::from(i));
                tokio::time::sleep_until(due).await;
            }
            let delta = if i == 0 {
                json!({"role": "assistant", "content": word})
            } else {
                json!({"content": word})
            };
            send!(chunk(delta, None));
            sent += 1;
        }
    }
    send!(chunk(json!({}), Some("stop")));
    send!(usage_chunk(prompt_tokens, sent));
    send!(Bytes::from_static(b"data: [DONE]\n\n"));
}

fn usage_chunk(prompt: u64, completion: u64) -> Bytes {
    let v = json!({
        "id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 0, "model": "fake",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    });
    Bytes::from(format!("data: {v}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directive_roundtrip() {
        let d = Directive {
            ttft_ms: 3,
            n: 7,
            gap_ms: 2,
            tool: true,
            mcp: true,
            py: true,
            hold_s: 9,
            size: 4,
        };
        assert_eq!(Directive::parse(&format!("hello {} there", d.render())), d);
        assert_eq!(Directive::parse("no directive"), Directive::default());
    }
}
