//! The built-in offline demo model.
//!
//! It lets newcomers try the product without an API key. It is deterministic and
//! rule based: it recognises a few simple requests in the last user message and
//! answers them by calling tools (`current_time`, `calculator`, `list_files`,
//! `read_file`) when those tools are offered, then phrases the tool results as
//! text; files attached to the message are read and described. Anything else
//! gets a short help text. Every text reply starts with `"[demo] "`.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::demo_arithmetic::{arithmetic_in, Arithmetic};
use super::demo_attachments::Next;
use super::demo_phrasing::summarize_tool_results;
use super::http::events_from;
use super::{
    estimate_tokens, ChatMessage, ChatRequest, EventStream, FinishReason, LlmError, LlmProvider,
    Role, StreamEvent, ToolCall, ToolChoice, Usage,
};

/// Prefix of every text reply of the demo model.
pub const DEMO_PREFIX: &str = "[demo] ";

/// The model name reported by the demo provider.
pub const DEMO_MODEL: &str = "demo";

/// The offline, deterministic demo model.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoProvider {
    /// Waited before each streamed event (`llm.demo_delay_ms`): streaming and Stop can be
    /// tried offline.
    delay: Duration,
}

impl DemoProvider {
    /// Creates the demo provider, answering at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates the demo provider that waits `delay` before each word it streams.
    pub fn with_delay(delay: Duration) -> Self {
        Self { delay }
    }

    /// Computes the whole reply for `req` as a list of events (what
    /// [`LlmProvider::stream_chat`] streams).
    pub fn respond(&self, req: &ChatRequest) -> Vec<StreamEvent> {
        let input_tokens = prompt_tokens(req);
        if super::title::is_title_request(req) {
            // A conversation's title: plain words, no "[demo]" prefix.
            let title = super::title::demo_title(req);
            return vec![
                StreamEvent::TextDelta(title.clone()),
                StreamEvent::Completed {
                    finish_reason: FinishReason::Stop,
                    tool_calls: Vec::new(),
                    usage: Some(Usage::new(input_tokens, estimate_tokens(&title))),
                    response_model: Some(DEMO_MODEL.to_string()),
                },
            ];
        }
        match plan(req) {
            Plan::Call(name, args) => {
                let arguments = args.to_string();
                let id = format!("call_demo_{}", count_tool_calls(&req.messages) + 1);
                let output_tokens = estimate_tokens(&format!("{name}{arguments}"));
                vec![
                    StreamEvent::ToolCallStart {
                        index: 0,
                        id: id.clone(),
                        name: name.to_string(),
                    },
                    StreamEvent::Completed {
                        finish_reason: FinishReason::ToolCalls,
                        tool_calls: vec![ToolCall {
                            id,
                            name: name.to_string(),
                            arguments,
                        }],
                        usage: Some(Usage::new(input_tokens, output_tokens)),
                        response_model: Some(DEMO_MODEL.to_string()),
                    },
                ]
            }
            Plan::Say(body) => {
                let text = format!("{DEMO_PREFIX}{body}");
                let mut events: Vec<StreamEvent> = text
                    .split_inclusive(' ')
                    .map(|w| StreamEvent::TextDelta(w.to_string()))
                    .collect();
                events.push(StreamEvent::Completed {
                    finish_reason: FinishReason::Stop,
                    tool_calls: Vec::new(),
                    usage: Some(Usage::new(input_tokens, estimate_tokens(&text))),
                    response_model: Some(DEMO_MODEL.to_string()),
                });
                events
            }
        }
    }
}

#[async_trait]
impl LlmProvider for DemoProvider {
    fn provider_name(&self) -> &'static str {
        "demo"
    }

    fn server_address(&self) -> Option<String> {
        None
    }

    async fn stream_chat(&self, req: ChatRequest) -> Result<EventStream, LlmError> {
        let events = self.respond(&req);
        if self.delay.is_zero() {
            return Ok(events_from(events));
        }
        let delay = self.delay;
        Ok(futures_util::stream::iter(events)
            .then(move |e| async move {
                tokio::time::sleep(delay).await;
                Ok(e)
            })
            .boxed())
    }
}

enum Plan {
    Call(&'static str, Value),
    Say(String),
}

pub(super) fn help_text() -> String {
    "Hi! I'm the built-in demo model: I run offline, need no API key, and only understand a few \
     simple requests. Try \"what time is it?\" (or \"time in Europe/Paris\"), \"what is 2+2*3\", \
     \"list my files\", \"read notes.txt\", \"analyse access.csv by status\" (with the file attached), \"what do our docs say about refunds?\" or \"search the web for rust releases\" and I will use the matching tool if it is enabled \
     for this chat. For real conversations, configure an OpenAI or Anthropic provider."
        .to_string()
}

fn plan(req: &ChatRequest) -> Plan {
    if let Some(m) = req
        .messages
        .last()
        .filter(|m| m.role == Role::User && !m.images.is_empty())
    {
        return Plan::Say(super::demo_image::describe(&m.images));
    }
    match super::demo_analyse::next(req) {
        Some(super::demo_analyse::Next::Call(args)) => {
            return Plan::Call(super::demo_analyse::TOOL, args)
        }
        Some(super::demo_analyse::Next::Say(text)) => return Plan::Say(text),
        None => {}
    }
    match super::demo_attachments::next(req) {
        Some(Next::Read(path)) => return Plan::Call("read_file", json!({ "path": path })),
        Some(Next::Say(text)) => return Plan::Say(text),
        None => {}
    }
    match req.messages.last() {
        Some(m) if m.role == Role::User => plan_for_user(req, &m.content),
        Some(m) if m.role == Role::Tool => Plan::Say(summarize_tool_results(&req.messages)),
        _ => Plan::Say(help_text()),
    }
}

fn plan_for_user(req: &ChatRequest, text: &str) -> Plan {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let has = |w: &str| words.iter().any(|x| x == w);

    let about_documents = [
        "docs",
        "documents",
        "knowledge",
        "collection",
        "collections",
    ]
    .iter()
    .any(|w| has(w));
    let wanted: Option<(&'static str, Value)> =
        if let Some(query) = super::demo_web::web_target(text) {
            Some(("web_search", json!({ "query": query })))
        } else if let Some(fact) = remember_target(text) {
            Some(("remember", json!({ "text": fact })))
        } else if let Some(path) = read_target(text) {
            Some(("read_file", json!({ "path": path })))
        } else if has("files") || (has("list") && has("file")) {
            Some(("list_files", json!({})))
        } else if has("time") || has("date") || has("clock") {
            match timezone_in(text) {
                Some(tz) => Some(("current_time", json!({ "timezone": tz }))),
                None => Some(("current_time", json!({}))),
            }
        } else if about_documents {
            Some(("search_knowledge", json!({ "query": text })))
        } else {
            match arithmetic_in(text) {
                Some(Arithmetic::Expression(e)) => Some(("calculator", json!({ "expression": e }))),
                Some(Arithmetic::Unknown(name)) => {
                    return Plan::Say(format!(
                        "I cannot compute that: the calculator has no function `{name}`. It knows \
                     + - * / % ^, parentheses, pi, e, sqrt, abs, ln, log10, log2, exp, the \
                     trigonometric functions, floor, ceil, round, min and max."
                    ))
                }
                None => None,
            }
        };

    match wanted {
        Some((tool, args)) if tool_available(req, tool) => Plan::Call(tool, args),
        Some((tool, _)) => Plan::Say(format!(
            "I would use the `{tool}` tool for that, but your role does not allow it. An admin \
             can allow it under Roles & tools."
        )),
        None => Plan::Say(help_text()),
    }
}

fn tool_available(req: &ChatRequest, name: &str) -> bool {
    req.tool_choice != ToolChoice::None && req.tools.iter().any(|t| t.name == name)
}

/// What a message starting "remember (that) ..." asks to keep.
fn remember_target(text: &str) -> Option<String> {
    let t = text.trim();
    let lower = t.to_lowercase();
    let rest = ["remember that ", "remember: ", "remember "]
        .iter()
        .find_map(|p| lower.starts_with(p).then(|| t.get(p.len()..)).flatten())?;
    let fact = rest.trim().trim_end_matches(['.', '!']).trim();
    (!fact.is_empty()).then(|| fact.to_owned())
}

/// The file named after the word "read" (`read notes.txt`, `read the file "a b.md"`).
fn read_target(text: &str) -> Option<String> {
    const FILLER: [&str; 5] = ["the", "file", "my", "me", "a"];
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let pos = tokens.iter().position(|t| {
        t.trim_matches(|c: char| !c.is_alphanumeric())
            .eq_ignore_ascii_case("read")
    })?;
    // "read" must start the request ("read x", "please read x", "can you read x")
    // unless the target clearly is a file name.
    let leading = pos == 0
        || tokens[..pos].iter().all(|t| {
            matches!(
                t.to_lowercase()
                    .trim_matches(|c: char| !c.is_alphanumeric()),
                "please" | "can" | "could" | "you" | "now" | "and"
            )
        });
    let rest = &tokens[pos + 1..];
    let token = rest
        .iter()
        .find(|t| !FILLER.contains(&t.to_lowercase().as_str()))?;
    let name = token
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`'))
        .trim_end_matches(['?', '!', ',', ';', ':', '.'])
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`'));
    let looks_like_file = name.contains('.') || name.contains('/');
    (!name.is_empty() && (leading || looks_like_file)).then(|| name.to_string())
}

/// An IANA zone like `Europe/Paris` or `America/Argentina/Buenos_Aires`, or `UTC`.
fn timezone_in(text: &str) -> Option<String> {
    const AREAS: [&str; 11] = [
        "Africa",
        "America",
        "Antarctica",
        "Arctic",
        "Asia",
        "Atlantic",
        "Australia",
        "Europe",
        "Indian",
        "Pacific",
        "Etc",
    ];
    for raw in text.split_whitespace() {
        let token = raw.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '/'));
        let mut parts = token.split('/');
        let area = parts.next().unwrap_or("");
        let rest: Vec<&str> = parts.collect();
        let rest_ok = !rest.is_empty()
            && rest.len() <= 2
            && rest.iter().all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
            });
        if AREAS.contains(&area) && rest_ok {
            return Some(token.to_string());
        }
        if token == "UTC" {
            return Some("UTC".to_string());
        }
    }
    None
}

fn count_tool_calls(messages: &[ChatMessage]) -> usize {
    messages.iter().map(|m| m.tool_calls.len()).sum()
}

fn prompt_tokens(req: &ChatRequest) -> u64 {
    let mut text = String::new();
    let mut images = 0;
    for m in &req.messages {
        text.push_str(&m.content);
        images += m.images.iter().map(|i| i.tokens).sum::<u64>();
        for c in &m.tool_calls {
            text.push_str(&c.name);
            text.push_str(&c.arguments);
        }
    }
    for t in &req.tools {
        text.push_str(&t.name);
        text.push_str(&t.description);
        text.push_str(&t.parameters.to_string());
    }
    estimate_tokens(&text) + images
}

#[cfg(test)]
#[path = "demo_tests.rs"]
mod tests;
