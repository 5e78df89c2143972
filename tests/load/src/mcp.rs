//! A fast local MCP server over Streamable HTTP, and the kit's own persistent client session
//! to it (the baseline an MCP call through AgentChat is compared with).
//!
//! The server speaks the `initialize` lifecycle (2025-11-25, 2025-06-18, 2025-03-26) with
//! `Mcp-Session-Id` sessions and answers every POST with one `application/json` message
//! (the transport allows JSON or SSE per response); GET is 405 (no server-initiated
//! stream), DELETE ends a session. A `server/discover` probe (the stateless 2026-07-28
//! revision) gets JSON-RPC "method not found", which tells a client to fall back to
//! `initialize`. One tool, `echo {text}`, answered at once.
//!
//! Two endpoints with the same behaviour, so the two clients' connections are counted apart:
//! `/agentchat/mcp` (configured in the server under test) and `/direct/mcp` (the kit's own
//! session). `GET /stats` → `{connections: {agentchat, direct}, calls: {agentchat, direct}}`,
//! where a connection is counted once, by the endpoint of its first request.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// The name the kit gives this server in AgentChat's config: tools are `loadkit__echo`.
pub const SERVER_NAME: &str = "loadkit";
const SESSION_HEADER: &str = "mcp-session-id";
const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// Largest request body read (a tool call's arguments are tiny).
const MAX_BODY: usize = 64 * 1024;

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    calls: AtomicU64,
}

#[derive(Default)]
struct Shared {
    agentchat: Counters,
    direct: Counters,
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicU64,
}

type Body = BoxBody<Bytes, Infallible>;

fn respond(status: StatusCode, body: Option<&Value>, session: Option<&str>) -> Response<Body> {
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    let mut r = Response::new(Full::new(bytes).boxed());
    *r.status_mut() = status;
    if body.is_some() {
        r.headers_mut().insert(
            "content-type",
            hyper::header::HeaderValue::from_static("application/json"),
        );
    }
    if let Some(s) = session.and_then(|s| s.parse().ok()) {
        r.headers_mut().insert(SESSION_HEADER, s);
    }
    r
}

/// Binds `addr` (loopback only), prints `LISTENING <port>` on stdout, serves forever.
pub async fn serve(addr: std::net::SocketAddr) -> anyhow::Result<()> {
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the MCP server only binds loopback addresses"
    );
    let listener = TcpListener::bind(addr).await?;
    println!("LISTENING {}", listener.local_addr()?.port());
    let shared = Arc::new(Shared::default());
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let counted = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            let svc =
                hyper::service::service_fn(move |req| handle(req, shared.clone(), counted.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    counted: Arc<AtomicBool>,
) -> Result<Response<Body>, Infallible> {
    let counters = match req.uri().path() {
        "/agentchat/mcp" => &shared.agentchat,
        "/direct/mcp" => &shared.direct,
        "/stats" if req.method() == Method::GET => {
            let c = |c: &Counters| {
                (
                    c.connections.load(Ordering::Relaxed),
                    c.calls.load(Ordering::Relaxed),
                )
            };
            let (a, d) = (c(&shared.agentchat), c(&shared.direct));
            let body = json!({"connections": {"agentchat": a.0, "direct": d.0}, "calls": {"agentchat": a.1, "direct": d.1}});
            return Ok(respond(StatusCode::OK, Some(&body), None));
        }
        _ => return Ok(respond(StatusCode::NOT_FOUND, None, None)),
    };
    if !counted.swap(true, Ordering::Relaxed) {
        counters.connections.fetch_add(1, Ordering::Relaxed);
    }
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *req.method() {
        Method::POST => {}
        Method::DELETE => {
            if let (Some(s), Ok(mut all)) = (&session, shared.sessions.lock()) {
                all.remove(s);
            }
            return Ok(respond(StatusCode::OK, None, None));
        }
        _ => return Ok(respond(StatusCode::METHOD_NOT_ALLOWED, None, None)),
    }
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(respond(StatusCode::PAYLOAD_TOO_LARGE, None, None)),
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        let e = rpc_error(Value::Null, -32700, "parse error");
        return Ok(respond(StatusCode::BAD_REQUEST, Some(&e), None));
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = msg.get("id").cloned() else {
        // A notification or a response: nothing to answer.
        return Ok(respond(StatusCode::ACCEPTED, None, None));
    };
    if method == "initialize" {
        let asked = msg
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str);
        let version = asked
            .filter(|v| VERSIONS.contains(v))
            .unwrap_or(VERSIONS[0]);
        let sid = format!("s{}", shared.next_session.fetch_add(1, Ordering::Relaxed));
        if let Ok(mut all) = shared.sessions.lock() {
            all.insert(sid.clone());
        }
        let result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "agentchat-load-mcp", "version": "0.1.0"},
        });
        return Ok(respond(
            StatusCode::OK,
            Some(&rpc_result(id, result)),
            Some(&sid),
        ));
    }
    if method == "server/discover" {
        let e = rpc_error(
            id,
            -32601,
            "method not found: this server speaks initialize",
        );
        return Ok(respond(StatusCode::OK, Some(&e), None));
    }
    let known = session.as_ref().is_some_and(|s| {
        shared
            .sessions
            .lock()
            .map(|all| all.contains(s))
            .unwrap_or(false)
    });
    if !known {
        let e = rpc_error(id, -32001, "unknown or missing session");
        return Ok(respond(StatusCode::NOT_FOUND, Some(&e), None));
    }
    let answer = match method {
        "ping" => rpc_result(id, json!({})),
        "tools/list" => rpc_result(id, json!({"tools": [echo_spec()]})),
        "tools/call" => {
            counters.calls.fetch_add(1, Ordering::Relaxed);
            let name = msg.pointer("/params/name").and_then(Value::as_str);
            let text = msg
                .pointer("/params/arguments/text")
                .and_then(Value::as_str);
            match (name, text) {
                (Some("echo"), Some(t)) => rpc_result(
                    id,
                    json!({"content": [{"type": "text", "text": t}], "isError": false}),
                ),
                (Some("echo"), None) => rpc_error(id, -32602, "echo needs `text`"),
                _ => rpc_error(id, -32602, "unknown tool"),
            }
        }
        _ => rpc_error(id, -32601, "method not found"),
    };
    Ok(respond(StatusCode::OK, Some(&answer), session.as_deref()))
}

fn echo_spec() -> Value {
    json!({
        "name": "echo",
        "description": "Echoes its text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 1000}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": true},
    })
}

fn rpc_result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// `{connections, calls}` for one endpoint, read from `GET /stats`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct EndpointStats {
    pub connections: u64,
    pub calls: u64,
}

/// The server's counters: (through AgentChat, the kit's direct session).
pub async fn stats(http: &reqwest::Client, base: &str) -> Option<(EndpointStats, EndpointStats)> {
    let v: Value = http
        .get(format!("{base}/stats"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    let one = |who: &str| EndpointStats {
        connections: v
            .pointer(&format!("/connections/{who}"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        calls: v
            .pointer(&format!("/calls/{who}"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
    };
    Some((one("agentchat"), one("direct")))
}

/// The kit's own persistent session (the baseline): initialized once, then `tools/call`
/// POSTs over kept-alive connections, exactly what a well-behaved MCP client does.
#[derive(Clone)]
pub struct DirectSession {
    http: reqwest::Client,
    url: String,
    session: String,
    next_id: Arc<AtomicU64>,
}

impl DirectSession {
    pub async fn open(http: reqwest::Client, base: &str) -> anyhow::Result<Self> {
        let url = format!("{base}/direct/mcp");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSIONS[0], "capabilities": {},
            "clientInfo": {"name": "agentchat-load", "version": "0.1.0"}}});
        let resp = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .context("MCP initialize")?;
        let session = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .context("MCP initialize: no session id")?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        http.post(&url)
            .header(SESSION_HEADER, &session)
            .header("accept", "application/json, text/event-stream")
            .json(&note)
            .send()
            .await
            .context("MCP initialized notification")?;
        Ok(Self {
            http,
            url,
            session,
            next_id: Arc::new(AtomicU64::new(1)),
        })
    }

    /// One `tools/call echo` round trip, µs; `Err` names what failed.
    pub async fn call(&self, text: &str) -> Result<u64, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}});
        let t0 = Instant::now();
        let resp = self
            .http
            .post(&self.url)
            .header(SESSION_HEADER, &self.session)
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|_| "mcp_request".to_owned())?;
        let v: Value = resp.json().await.map_err(|_| "mcp_body".to_owned())?;
        if v.pointer("/result/isError") != Some(&Value::Bool(false)) {
            return Err("mcp_error".into());
        }
        Ok(crate::client::us(t0.elapsed()))
    }
}
