//! One provider's upstream endpoint: its base URL, key, settings and per-thread clients, and
//! the call every HTTP adapter makes (POST with retries, then the answer read whole as JSON or
//! decoded as server-sent events). The adapters differ only in path, headers and formats.

use serde::Serialize;
use tokio::time::Instant;

use super::{
    build_clients, decode_sse, events_from, is_json_response, normalize_base_url, read_json_body,
    send_with_retry, sse_events, HttpSettings, SseDecoder,
};
use crate::llm::{host_of, EventStream, LlmError, StreamEvent};
use crate::shard::Sharded;

#[derive(Debug, Clone)]
pub struct Upstream {
    base_url: String,
    /// Host of the base URL, parsed once (it names the server in every call's span).
    host: Option<String>,
    api_key: Option<String>,
    settings: HttpSettings,
    /// One client (and keep-alive pool) per thread: see [`crate::shard`].
    clients: Sharded<reqwest::Client>,
}

impl Upstream {
    /// A trailing slash of `base_url` is ignored; a blank `api_key` counts as none.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        settings: HttpSettings,
    ) -> Result<Self, LlmError> {
        let base_url = normalize_base_url(&base_url.into())?;
        let clients = build_clients(&settings)?;
        Ok(Self {
            host: host_of(&base_url),
            base_url,
            api_key: api_key.filter(|k| !k.trim().is_empty()),
            settings,
            clients,
        })
    }

    /// The normalized base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Host of the base URL (the `server.address` of spans).
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// Whether calls ask for a streamed answer.
    pub fn streaming(&self) -> bool {
        self.settings.streaming
    }

    /// POSTs `body` to `{base_url}{path}`, retrying as [`send_with_retry`] does; `prepare`
    /// adds the adapter's headers (given the key, if any). A JSON answer goes through
    /// `parse_whole`, a stream through `decoder`.
    pub async fn call<B, D>(
        &self,
        path: &str,
        body: &B,
        prepare: impl Fn(reqwest::RequestBuilder, Option<&str>) -> reqwest::RequestBuilder,
        parse_whole: impl FnOnce(serde_json::Value) -> Result<Vec<StreamEvent>, LlmError>,
        decoder: D,
    ) -> Result<EventStream, LlmError>
    where
        B: Serialize + ?Sized,
        D: SseDecoder,
    {
        let started = Instant::now();
        let url = format!("{}{path}", self.base_url);
        let resp = send_with_retry(&self.settings, started, || {
            prepare(
                self.clients.current().post(&url).json(body),
                self.api_key.as_deref(),
            )
        })
        .await?;
        if !self.settings.streaming || is_json_response(&resp) {
            let value = read_json_body(resp, &self.settings, started).await?;
            return Ok(events_from(parse_whole(value)?));
        }
        let events = sse_events(resp, &self.settings, started);
        Ok(decode_sse(events, decoder))
    }
}
