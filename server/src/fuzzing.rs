//! Entry points for the `cargo fuzz` targets in `fuzz/` (not an API): the streaming
//! decoders are private to their adapters, so these run a whole byte stream through the
//! same SSE parser and decoder the live adapters use; `pdf_guard` runs the checks made on an
//! uploaded PDF before the parser sees it.

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{stream, StreamExt};

use crate::llm::http::{decode_sse, SseDecoder};
use crate::llm::{anthropic, openai, LlmError, StreamEvent};

/// Decodes `body`, delivered in chunks of `chunk` bytes, as an OpenAI chat-completions stream.
pub fn openai_sse(body: &[u8], chunk: usize) -> Vec<Result<StreamEvent, LlmError>> {
    decode(body, chunk, openai::ChunkDecoder::default())
}

/// Decodes `body`, delivered in chunks of `chunk` bytes, as an Anthropic Messages stream.
pub fn anthropic_sse(body: &[u8], chunk: usize) -> Vec<Result<StreamEvent, LlmError>> {
    decode(body, chunk, anthropic::MessageDecoder::default())
}

fn decode<D: SseDecoder>(
    body: &[u8],
    chunk: usize,
    decoder: D,
) -> Vec<Result<StreamEvent, LlmError>> {
    let chunks: Vec<Result<Vec<u8>, LlmError>> =
        body.chunks(chunk.max(1)).map(|c| Ok(c.to_vec())).collect();
    let events = stream::iter(chunks)
        .eventsource()
        .map(|item| {
            item.map_err(|e| match e {
                EventStreamError::Transport(err) => err,
                EventStreamError::Utf8(err) => LlmError::Malformed(format!("utf-8: {err}")),
                EventStreamError::Parser(err) => LlmError::Malformed(format!("sse: {err}")),
            })
        })
        .boxed();
    // Every chunk is already there, so the stream never waits; the decoder still arms a Tokio
    // timer once a message has finished, so it runs on a (reused) current-thread runtime.
    thread_local! {
        static RUNTIME: Option<tokio::runtime::Runtime> =
            tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
    }
    RUNTIME.with(|rt| match rt {
        Some(rt) => rt.block_on(decode_sse(events, decoder).collect::<Vec<_>>()),
        None => Vec::new(),
    })
}

/// The PDF guard (raw stream scan, page tree, byte and operator budgets) on `bytes`, with
/// budgets small enough for a fuzzer's time limit: never a panic, whatever the bytes.
pub fn pdf_guard(bytes: &[u8]) -> Result<(), crate::knowledge::extract::ExtractError> {
    let limits = crate::knowledge::extract::ExtractLimits {
        max_pdf_stream_bytes: 1 << 20,
        max_pdf_operators: 100_000,
        ..Default::default()
    };
    crate::knowledge::extract::pdf_guard(bytes, &limits)
}
