//! A fake LLM upstream for tests.
//!
//! An actix-web server on `127.0.0.1:<random port>` (own thread, own actix system)
//! that speaks the real wire formats of OpenAI Chat Completions
//! (`POST /v1/chat/completions`) and the Anthropic Messages API
//! (`POST /v1/messages`), both streaming (SSE) and non-streaming, and serves a FIFO
//! queue of scripted replies. Every request is recorded for assertions.
//!
//! It also serves OpenAI's embeddings endpoint (`POST /v1/embeddings`, see
//! [`FakeUpstream::set_embedding_dims`] and the methods after it) with the vectors of the
//! built-in `demo-embed` model ([`agentchat::llm::demo_embed::embed`]), so a test can
//! compute what the server should have stored. Embeddings requests are recorded apart
//! ([`FakeUpstream::embedding_requests`]): [`FakeUpstream::requests`] and
//! [`FakeUpstream::request_count`] keep counting chat requests only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

use agentchat::llm::Usage;

/// What the fake upstream answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A plain text answer (streamed word by word in streaming mode).
    Text {
        /// The answer.
        text: String,
        /// Usage to report; `None` omits it (OpenAI) or reports zeros (Anthropic).
        usage: Option<Usage>,
    },
    /// One or more tool calls, `(id, name, arguments_json_string)`, in index order.
    ToolCalls {
        /// The calls.
        calls: Vec<(String, String, String)>,
        /// Usage to report, as for [`Reply::Text`].
        usage: Option<Usage>,
    },
    /// An HTTP error status with a raw body and optional `Retry-After` (seconds).
    Status {
        /// HTTP status code.
        code: u16,
        /// Raw response body (use [`Reply::error`] for a provider-shaped one).
        body: String,
        /// `Retry-After` header value in seconds.
        retry_after: Option<u64>,
    },
    /// Starts a tool call, sends part of its arguments, then ends the response
    /// without any finish reason / `message_stop` / `[DONE]`.
    CutMidToolCall,
    /// HTTP 200 with malformed data lines (or a malformed JSON body).
    Garbage,
    /// Sends the response head and the first event, then nothing, forever.
    Hang,
}

impl Reply {
    /// A text reply without usage.
    pub fn text(text: impl Into<String>) -> Self {
        Reply::Text {
            text: text.into(),
            usage: None,
        }
    }

    /// A single tool call without usage.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Reply::ToolCalls {
            calls: vec![(id.into(), name.into(), arguments.into())],
            usage: None,
        }
    }

    /// An error status with a body shaped like both providers' error objects
    /// (`{"type":"error","error":{"type":..,"message":..}}`).
    pub fn error(code: u16, message: impl Into<String>) -> Self {
        Reply::Status {
            code,
            body: json!({
                "type": "error",
                "error": {"type": "api_error", "message": message.into()},
            })
            .to_string(),
            retry_after: None,
        }
    }

    /// Wraps the reply in [`Scripted`] to set knobs.
    pub fn scripted(self) -> Scripted {
        Scripted::from(self)
    }

    /// See [`Scripted::delay_first_byte`].
    pub fn delay_first_byte(self, d: Duration) -> Scripted {
        self.scripted().delay_first_byte(d)
    }

    /// See [`Scripted::chunk_delay`].
    pub fn chunk_delay(self, d: Duration) -> Scripted {
        self.scripted().chunk_delay(d)
    }

    /// See [`Scripted::split_args_into`].
    pub fn split_args_into(self, n: usize) -> Scripted {
        self.scripted().split_args_into(n)
    }

    /// See [`Scripted::hang`].
    pub fn hang(self) -> Scripted {
        self.scripted().hang()
    }
}

/// A [`Reply`] plus timing/shape knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scripted {
    /// The reply.
    pub reply: Reply,
    /// Wait this long before sending the response head.
    pub delay_first_byte: Option<Duration>,
    /// Wait this long before each streamed event.
    pub chunk_delay: Option<Duration>,
    /// Split each tool call's argument string across this many chunks (min 1).
    pub split_args_into: usize,
    /// Send everything but the finishing events, then keep the connection open
    /// sending nothing (non-streaming: never answer).
    pub hang: bool,
    /// Streaming: end the body this long after its last event (a real upstream's end of
    /// body can trail its `[DONE]`).
    pub end_delay: Option<Duration>,
}

impl From<Reply> for Scripted {
    fn from(reply: Reply) -> Self {
        Scripted {
            reply,
            delay_first_byte: None,
            chunk_delay: None,
            split_args_into: 4,
            hang: false,
            end_delay: None,
        }
    }
}

impl Scripted {
    /// Sets [`Scripted::delay_first_byte`].
    pub fn delay_first_byte(mut self, d: Duration) -> Self {
        self.delay_first_byte = Some(d);
        self
    }

    /// Sets [`Scripted::chunk_delay`].
    pub fn chunk_delay(mut self, d: Duration) -> Self {
        self.chunk_delay = Some(d);
        self
    }

    /// Sets [`Scripted::split_args_into`].
    pub fn split_args_into(mut self, n: usize) -> Self {
        self.split_args_into = n.max(1);
        self
    }

    /// Sets [`Scripted::end_delay`].
    pub fn end_delay(mut self, d: Duration) -> Self {
        self.end_delay = Some(d);
        self
    }

    /// Sets [`Scripted::hang`].
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<VecDeque<Scripted>>,
    default: Mutex<Option<Scripted>>,
    requests: Mutex<Vec<Value>>,
    connections: std::sync::atomic::AtomicUsize,
    embeddings: Mutex<Embeddings>,
    embedding_requests: Mutex<Vec<Value>>,
}

/// The embeddings endpoint's knobs and counters.
#[derive(Debug)]
struct Embeddings {
    /// Dimensions when the request names none.
    dims: usize,
    /// Vectors of this length whatever was asked (a misconfigured model).
    wrong_dims: Option<usize>,
    /// Answer this many more requests with `fail_status`.
    fail_left: usize,
    fail_status: u16,
    /// Wait this long before answering each request.
    delay: Option<Duration>,
    /// Answer 400 to a request with more inputs than this.
    max_batch: Option<usize>,
    /// Requests received (all of them, failed ones too).
    requests: usize,
    /// Inputs answered with a vector.
    inputs: usize,
}

impl Default for Embeddings {
    fn default() -> Self {
        Self {
            dims: agentchat::llm::demo_embed::DEMO_DIMENSIONS,
            wrong_dims: None,
            fail_left: 0,
            fail_status: 500,
            delay: None,
            max_batch: None,
            requests: 0,
            inputs: 0,
        }
    }
}

/// OpenAI's own limit on the inputs of one embeddings request.
pub const OPENAI_MAX_EMBEDDING_INPUTS: usize = 2048;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running fake upstream; stopped when dropped.
#[derive(Debug)]
pub struct FakeUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    handle: ServerHandle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
}

impl FakeUpstream {
    /// Starts the server on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If the server cannot be started (test support only).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(s) => s,
            Err(e) => panic!("cannot start the fake upstream: {e}"),
        }
    }

    /// Starts the server on `127.0.0.1:0`, reporting failures.
    pub async fn try_start() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = tokio::sync::oneshot::channel::<std::io::Result<ServerHandle>>();
        let data = web::Data::from(shared.clone());
        let counted = shared.clone();
        std::thread::Builder::new()
            .name("fake-upstream".into())
            .spawn(move || {
                let system = actix_web::rt::System::new();
                system.block_on(async move {
                    let server = HttpServer::new(move || {
                        App::new()
                            .app_data(data.clone())
                            .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                            .route("/v1/chat/completions", web::post().to(openai_handler))
                            .route("/v1/messages", web::post().to(anthropic_handler))
                            .route("/v1/embeddings", web::post().to(embeddings_handler))
                    })
                    .on_connect(move |_, _| {
                        counted
                            .connections
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    })
                    .workers(1)
                    .disable_signals()
                    .shutdown_timeout(0)
                    .listen(listener);
                    match server {
                        Ok(server) => {
                            let server = server.run();
                            let _ = tx.send(Ok(server.handle()));
                            let _ = server.await;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            })?;
        let handle = rx
            .await
            .map_err(|_| std::io::Error::other("fake upstream thread died"))??;
        Ok(Self {
            addr,
            shared,
            handle,
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for the OpenAI adapter: `http://127.0.0.1:PORT/v1`.
    pub fn base_url_openai(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for the Anthropic adapter: `http://127.0.0.1:PORT`.
    pub fn base_url_anthropic(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a reply (FIFO).
    pub fn push(&self, reply: impl Into<Scripted>) {
        lock(&self.shared.queue).push_back(reply.into());
    }

    /// The reply repeated when the queue is empty (`None`: answer 500).
    pub fn set_default(&self, reply: Option<Scripted>) {
        *lock(&self.shared.default) = reply;
    }

    /// The requests received so far: `{"path", "headers": {..}, "body"}` where
    /// headers are `authorization`, `x-api-key`, `anthropic-version`, `content-type`
    /// (when present) and body is the parsed JSON (or a string if it was not JSON).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// How many TCP connections were accepted.
    pub fn connection_count(&self) -> usize {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    // ------------------------------------------------------------ embeddings

    /// Dimensions of the vectors `POST /v1/embeddings` answers when the request names none
    /// (a request's `dimensions` wins, as with OpenAI's `text-embedding-3-*`). Default
    /// [`agentchat::llm::demo_embed::DEMO_DIMENSIONS`] (256), like the built-in `demo-embed`.
    pub fn set_embedding_dims(&self, dims: usize) {
        lock(&self.shared.embeddings).dims = dims.max(1);
    }

    /// Answers the next `n` embeddings requests with HTTP `status` and an OpenAI-shaped
    /// error body (`{"error": {"message", "type", "param", "code"}}`; 429 also sends
    /// `retry-after: 0`). Replaces what an earlier call left.
    pub fn fail_embeddings(&self, n: usize, status: u16) {
        let mut e = lock(&self.shared.embeddings);
        e.fail_left = n;
        e.fail_status = status;
    }

    /// `Some(d)`: every embeddings answer carries vectors of `d` dimensions whatever was
    /// asked (as a model other than the configured one would); `None`: back to normal.
    pub fn embeddings_wrong_dims(&self, dims: Option<usize>) {
        lock(&self.shared.embeddings).wrong_dims = dims;
    }

    /// Waits this long before answering each embeddings request (`None`: at once).
    pub fn set_embedding_delay(&self, delay: Option<Duration>) {
        lock(&self.shared.embeddings).delay = delay;
    }

    /// `Some(m)`: an embeddings request with more than `m` inputs is refused with 400
    /// `invalid_request_error`, as a provider with a smaller batch limit does. Above
    /// [`OPENAI_MAX_EMBEDDING_INPUTS`] it always is, as OpenAI does.
    pub fn set_embedding_max_batch(&self, max: Option<usize>) {
        lock(&self.shared.embeddings).max_batch = max;
    }

    /// How many embeddings requests were received (refused and failed ones included).
    pub fn embedding_request_count(&self) -> usize {
        lock(&self.shared.embeddings).requests
    }

    /// How many inputs were answered with a vector so far (over all successful requests).
    pub fn embedded_input_count(&self) -> usize {
        lock(&self.shared.embeddings).inputs
    }

    /// The embeddings requests received so far, as [`FakeUpstream::requests`] records chat
    /// requests: `{"path", "headers", "body"}`.
    pub fn embedding_requests(&self) -> Vec<Value> {
        lock(&self.shared.embedding_requests).clone()
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        // Sends the stop command right away; completion is not awaited.
        drop(self.handle.stop(false));
    }
}

async fn openai_handler(
    req: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    handle(Api::OpenAi, req, body, shared).await
}

async fn anthropic_handler(
    req: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    handle(Api::Anthropic, req, body, shared).await
}

/// The headers a recorded request keeps.
fn recorded_headers(req: &HttpRequest) -> Value {
    let mut headers = serde_json::Map::new();
    for name in [
        "authorization",
        "x-api-key",
        "anthropic-version",
        "content-type",
    ] {
        if let Some(v) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
            headers.insert(name.to_string(), json!(v));
        }
    }
    Value::Object(headers)
}

async fn handle(
    api: Api,
    req: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let parsed: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    lock(&shared.requests).push(json!({
        "path": req.path(),
        "headers": recorded_headers(&req),
        "body": parsed.clone(),
    }));

    let scripted = lock(&shared.queue)
        .pop_front()
        .or_else(|| lock(&shared.default).clone());
    let Some(scripted) = scripted else {
        let body = match api {
            Api::OpenAi => {
                json!({"error": {"message": "fake upstream: no scripted reply", "type": "server_error"}})
            }
            Api::Anthropic => {
                json!({"type": "error", "error": {"type": "api_error", "message": "fake upstream: no scripted reply"}})
            }
        };
        return HttpResponse::InternalServerError()
            .content_type("application/json")
            .body(body.to_string());
    };

    if let Some(d) = scripted.delay_first_byte {
        tokio::time::sleep(d).await;
    }
    let stream = parsed
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = parsed
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();

    if let Reply::Status {
        code,
        body,
        retry_after,
    } = &scripted.reply
    {
        let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = HttpResponse::build(status);
        resp.content_type("application/json");
        if let Some(secs) = retry_after {
            resp.insert_header(("retry-after", secs.to_string()));
        }
        return resp.body(body.clone());
    }

    if stream {
        let script = match api {
            Api::OpenAi => openai_stream(&scripted, &model),
            Api::Anthropic => anthropic_stream(&scripted, &model),
        };
        sse_response(script, scripted.chunk_delay, scripted.end_delay)
    } else {
        if scripted.hang || scripted.reply == Reply::Hang {
            futures_util::future::pending::<()>().await;
        }
        match non_stream_body(api, &scripted, &model) {
            Ok(v) => HttpResponse::Ok()
                .content_type("application/json")
                .body(v.to_string()),
            Err(raw) => {
                // Garbage / cut: a 200 whose body is not (complete) JSON.
                HttpResponse::Ok()
                    .content_type("application/json")
                    .body(raw)
            }
        }
    }
}

// ---------------------------------------------------------------- embeddings

/// `POST /v1/embeddings`, OpenAI's wire format: `{model, input: string | [string],
/// encoding_format?: "float" | "base64", dimensions?, user?}` answered with
/// `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
/// "usage": {"prompt_tokens", "total_tokens"}}`.
async fn embeddings_handler(
    req: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let parsed: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    lock(&shared.embedding_requests).push(json!({
        "path": req.path(),
        "headers": recorded_headers(&req),
        "body": parsed.clone(),
    }));
    let (fail, delay, dims, wrong_dims, max_batch) = {
        let mut e = lock(&shared.embeddings);
        e.requests += 1;
        let fail = (e.fail_left > 0).then(|| {
            e.fail_left -= 1;
            e.fail_status
        });
        (fail, e.delay, e.dims, e.wrong_dims, e.max_batch)
    };
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    if let Some(status) = fail {
        return openai_error(status, "fake upstream: scripted embeddings failure");
    }

    let Some(model) = parsed.get("model").and_then(Value::as_str) else {
        return openai_error(400, "you must provide a model parameter");
    };
    let inputs: Vec<String> = match parsed.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(Value::Array(_)) => {
            return openai_error(
                400,
                "'$.input' is invalid (the fake embeds strings only, not token arrays)",
            )
        }
        _ => return openai_error(400, "'$.input' is invalid: a string or an array of strings"),
    };
    if inputs.is_empty() || inputs.iter().any(String::is_empty) {
        return openai_error(400, "'$.input' is invalid: empty input");
    }
    let limit = max_batch
        .unwrap_or(OPENAI_MAX_EMBEDDING_INPUTS)
        .min(OPENAI_MAX_EMBEDDING_INPUTS);
    if inputs.len() > limit {
        return openai_error(
            400,
            &format!(
                "'$.input' is invalid: at most {limit} inputs per request, got {}",
                inputs.len()
            ),
        );
    }
    let base64 = match parsed.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return openai_error(400, &format!("invalid encoding_format {other:?}"));
        }
    };
    let dims = match parsed.get("dimensions") {
        None | Some(Value::Null) => dims,
        Some(v) => match v.as_u64().and_then(|d| usize::try_from(d).ok()) {
            Some(d) if (1..=16_000).contains(&d) => d,
            _ => return openai_error(400, "'$.dimensions' must be between 1 and 16000"),
        },
    };
    let dims = wrong_dims.unwrap_or(dims);

    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = agentchat::llm::demo_embed::embed(text, dims);
            let embedding = if base64 {
                use base64::Engine;
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens: usize = inputs.iter().map(|t| fake_token_count(t)).sum();
    lock(&shared.embeddings).inputs += inputs.len();
    HttpResponse::Ok().content_type("application/json").body(
        json!({
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })
        .to_string(),
    )
}

/// The fake's token count of an embedded text: a quarter of its characters, at least one.
pub fn fake_token_count(text: &str) -> usize {
    text.chars().count().div_ceil(4).max(1)
}

/// An error as OpenAI sends it.
fn openai_error(status: u16, message: &str) -> HttpResponse {
    let (kind, code) = match status {
        400 | 404 | 422 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        403 => (
            "invalid_request_error",
            json!("unsupported_country_region_territory"),
        ),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = HttpResponse::build(status);
    resp.content_type("application/json");
    if status == StatusCode::TOO_MANY_REQUESTS {
        resp.insert_header(("retry-after", "0"));
    }
    resp.body(
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            .to_string(),
    )
}

/// How a scripted SSE response ends after its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Close the response normally.
    Close,
    /// Keep the connection open forever, sending nothing.
    Hang,
}

struct SseScript {
    frames: Vec<String>,
    end: End,
}

fn sse_response(
    script: SseScript,
    chunk_delay: Option<Duration>,
    end_delay: Option<Duration>,
) -> HttpResponse {
    let frames = stream::iter(script.frames).then(move |frame| async move {
        if let Some(d) = chunk_delay {
            tokio::time::sleep(d).await;
        }
        Ok::<_, actix_web::Error>(web::Bytes::from(frame))
    });
    let body = match script.end {
        End::Close => match end_delay {
            None => frames.boxed_local(),
            Some(d) => frames
                .chain(
                    stream::once(tokio::time::sleep(d))
                        .filter_map(|()| async { None::<Result<web::Bytes, actix_web::Error>> }),
                )
                .boxed_local(),
        },
        End::Hang => frames.chain(stream::pending()).boxed_local(),
    };
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body)
}

/// Splits `s` into `n` pieces of roughly equal character counts (empty pieces dropped).
fn split_into(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = n.max(1);
    let size = chars.len().div_ceil(n).max(1);
    chars
        .chunks(size)
        .map(|c| c.iter().collect::<String>())
        .collect()
}

fn words(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_string).collect()
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

fn fake_id(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

// ---------------------------------------------------------------- OpenAI

fn openai_stream(s: &Scripted, model: &str) -> SseScript {
    let id = fake_id("chatcmpl-");
    let created = now_secs();
    let chunk = |delta: Value, finish: Value| {
        let v = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        format!("data: {v}\n\n")
    };
    let usage_chunk = |u: &Usage| {
        let v = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [],
            "usage": {
                "prompt_tokens": u.input_tokens,
                "completion_tokens": u.output_tokens,
                "total_tokens": u.input_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0},
            },
        });
        format!("data: {v}\n\n")
    };
    let done = "data: [DONE]\n\n".to_string();

    let mut body = Vec::new();
    let mut finish = Vec::new();
    match &s.reply {
        Reply::Text { text, usage } => {
            body.push(chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
            ));
            for w in words(text) {
                body.push(chunk(json!({"content": w}), Value::Null));
            }
            finish.push(chunk(json!({}), json!("stop")));
            if let Some(u) = usage {
                finish.push(usage_chunk(u));
            }
            finish.push(done);
        }
        Reply::ToolCalls { calls, usage } => {
            body.push(chunk(
                json!({"role": "assistant", "content": null}),
                Value::Null,
            ));
            for (index, (cid, name, args)) in calls.iter().enumerate() {
                body.push(chunk(
                    json!({"tool_calls": [{
                        "index": index, "id": cid, "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    Value::Null,
                ));
                for piece in split_into(args, s.split_args_into) {
                    body.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
            }
            finish.push(chunk(json!({}), json!("tool_calls")));
            if let Some(u) = usage {
                finish.push(usage_chunk(u));
            }
            finish.push(done);
        }
        Reply::CutMidToolCall => {
            body.push(chunk(
                json!({"role": "assistant", "content": null}),
                Value::Null,
            ));
            body.push(chunk(
                json!({"tool_calls": [{
                    "index": 0, "id": "call_cut", "type": "function",
                    "function": {"name": "calculator", "arguments": ""},
                }]}),
                Value::Null,
            ));
            body.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"expre"}}]}),
                Value::Null,
            ));
        }
        Reply::Garbage => {
            body.push("data: {\"id\": \"chatcmpl-x\", \"choices\": [{\"delta\": \n\n".into());
            body.push("data: this is not json\n\n".into());
            finish.push(done);
        }
        Reply::Hang => {
            body.push(chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            ));
            return SseScript {
                frames: body,
                end: End::Hang,
            };
        }
        Reply::Status { .. } => {}
    }
    if s.hang {
        return SseScript {
            frames: body,
            end: End::Hang,
        };
    }
    body.extend(finish);
    SseScript {
        frames: body,
        end: End::Close,
    }
}

fn openai_json(s: &Scripted, model: &str) -> Result<Value, String> {
    let (message, finish, usage) = match &s.reply {
        Reply::Text { text, usage } => (
            json!({"role": "assistant", "content": text, "refusal": null}),
            "stop",
            *usage,
        ),
        Reply::ToolCalls { calls, usage } => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
                })
                .collect();
            (
                json!({"role": "assistant", "content": null, "tool_calls": calls}),
                "tool_calls",
                *usage,
            )
        }
        Reply::CutMidToolCall => {
            return Err("{\"id\":\"chatcmpl-cut\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"call_cut\"".into())
        }
        _ => return Err("{\"this is\": not json".into()),
    };
    let mut v = json!({
        "id": fake_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
    });
    if let Some(u) = usage {
        v["usage"] = json!({
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0},
        });
    }
    Ok(v)
}

// ---------------------------------------------------------------- Anthropic

fn anthropic_event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

fn anthropic_stream(s: &Scripted, model: &str) -> SseScript {
    let usage = match &s.reply {
        Reply::Text { usage, .. } | Reply::ToolCalls { usage, .. } => usage.unwrap_or_default(),
        _ => Usage::default(),
    };
    let start = anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": fake_id("msg_"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            // Anthropic's `input_tokens` leaves out what the cache read or wrote.
            "usage": {"input_tokens": usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens,
                      "cache_creation_input_tokens": usage.cache_write_tokens,
                      "cache_read_input_tokens": usage.cache_read_tokens, "output_tokens": 1},
        }}),
    );
    let ping = anthropic_event("ping", json!({"type": "ping"}));
    let block_stop = |index: usize| {
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    let finish_events = |stop_reason: &str| {
        vec![
            anthropic_event(
                "message_delta",
                json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                       "usage": {"output_tokens": usage.output_tokens}}),
            ),
            anthropic_event("message_stop", json!({"type": "message_stop"})),
        ]
    };

    let mut body = vec![start];
    let mut finish = Vec::new();
    match &s.reply {
        Reply::Text { text, .. } => {
            body.push(anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            body.push(ping);
            for w in words(text) {
                body.push(anthropic_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": w}}),
                ));
            }
            body.push(block_stop(0));
            finish.extend(finish_events("end_turn"));
        }
        Reply::ToolCalls { calls, .. } => {
            body.push(ping);
            for (index, (id, name, args)) in calls.iter().enumerate() {
                body.push(anthropic_event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                body.push(anthropic_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": ""}}),
                ));
                for piece in split_into(args, s.split_args_into) {
                    body.push(anthropic_event(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
                body.push(block_stop(index));
            }
            finish.extend(finish_events("tool_use"));
        }
        Reply::CutMidToolCall => {
            body.push(anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": "toolu_cut", "name": "calculator", "input": {}}}),
            ));
            body.push(anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": "{\"expre"}}),
            ));
        }
        Reply::Garbage => {
            body.push("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": \n\n".into());
            body.push("event: message_stop\ndata: not json at all\n\n".into());
        }
        Reply::Hang => {
            body.push(ping);
            return SseScript {
                frames: body,
                end: End::Hang,
            };
        }
        Reply::Status { .. } => {}
    }
    if s.hang {
        return SseScript {
            frames: body,
            end: End::Hang,
        };
    }
    body.extend(finish);
    SseScript {
        frames: body,
        end: End::Close,
    }
}

fn anthropic_json(s: &Scripted, model: &str) -> Result<Value, String> {
    let (content, stop, usage) = match &s.reply {
        Reply::Text { text, usage } => (json!([{"type": "text", "text": text}]), "end_turn", *usage),
        Reply::ToolCalls { calls, usage } => {
            let blocks: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| {
                    let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                })
                .collect();
            (Value::Array(blocks), "tool_use", *usage)
        }
        Reply::CutMidToolCall => {
            return Err("{\"id\":\"msg_cut\",\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_cut\"".into())
        }
        _ => return Err("{\"this is\": not json".into()),
    };
    let u = usage.unwrap_or_default();
    Ok(json!({
        "id": fake_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens},
    }))
}

fn non_stream_body(api: Api, s: &Scripted, model: &str) -> Result<Value, String> {
    match api {
        Api::OpenAi => openai_json(s, model),
        Api::Anthropic => anthropic_json(s, model),
    }
}
