//! The Streamable HTTP client under rmcp's transport: rmcp's own reqwest client, plus the
//! per-call headers a shared session cannot carry in its fixed header set. The tool adapter
//! puts the caller's identity token and trace context in the request's `_meta`; here they
//! become the `X-AgentChat-User` and `traceparent` headers of that one POST (the token is
//! taken out of the body, the trace context stays, as MCP's OpenTelemetry convention has it).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use reqwest013::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// `_meta` key holding the identity JWT on its way to the header.
pub const IDENTITY_META_KEY: &str = "io.agentchat/identity";
/// `_meta` key of the W3C trace context.
pub const TRACEPARENT_META_KEY: &str = "traceparent";
/// The header carrying the identity JWT.
pub const IDENTITY_HEADER: &str = "x-agentchat-user";

/// rmcp's reqwest client with per-request headers lifted out of `_meta`.
#[derive(Clone)]
pub struct HeaderLiftingClient {
    inner: reqwest013::Client,
}

impl HeaderLiftingClient {
    pub fn new(inner: reqwest013::Client) -> Self {
        Self { inner }
    }
}

/// Moves our per-call values from a `tools/call` request's `_meta` into headers.
fn lift(message: &mut ClientJsonRpcMessage, headers: &mut HashMap<HeaderName, HeaderValue>) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &mut request.request else {
        return;
    };
    let Some(meta) = call.params.meta.as_mut() else {
        return;
    };
    let map = &mut meta.0 .0;
    if let Some(serde_json::Value::String(token)) = map.remove(IDENTITY_META_KEY) {
        if let Ok(v) = HeaderValue::from_str(&token) {
            headers.insert(HeaderName::from_static(IDENTITY_HEADER), v);
        }
    }
    if let Some(serde_json::Value::String(tp)) = map.get(TRACEPARENT_META_KEY) {
        if let Ok(v) = HeaderValue::from_str(tp) {
            headers.insert(HeaderName::from_static("traceparent"), v);
        }
    }
}

type Error = StreamableHttpError<reqwest013::Error>;

impl StreamableHttpClient for HeaderLiftingClient {
    type Error = reqwest013::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        mut message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        lift(&mut message, &mut custom_headers);
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        mut message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        lift(&mut message, &mut custom_headers);
        self.inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        mut message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        lift(&mut message, &mut custom_headers);
        self.inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
