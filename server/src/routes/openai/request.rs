//! A `/v1/chat/completions` request, checked and translated into an agent turn. Every input
//! is bounded: messages, their sizes, tools and their schemas, the whole context.

use serde_json::json;

use super::error::OpenAiError;
use crate::config::LlmSettings;
use crate::db::models::message::NewMessage;
use crate::domain::MessageRole as StoredRole;
use crate::llm::openai::wire::{self, Content, ContentPart, MessageRole};
use crate::llm::{ChatMessage, Role, ToolCall, ToolSpec};
use crate::turn::MAX_MESSAGE_CHARS;
use crate::turn::{message_tokens, ApiTurn, StoredToolCall};

/// Most messages in one request.
pub const MAX_MESSAGES: usize = 256;
/// Most client tools in one request (OpenAI's own limit is 128).
pub const MAX_TOOLS: usize = 64;
/// Largest client tool description, in characters.
const MAX_DESCRIPTION_CHARS: usize = 4096;
/// Largest client tool parameter schema, serialized.
const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// Most tool calls one assistant message of the request may carry.
const MAX_CALLS_PER_MESSAGE: usize = 64;

/// How the answer is wanted.
#[derive(Debug, Clone)]
pub struct Answer {
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
}

/// Checks the request and makes the turn of it.
pub fn translate(
    req: wire::ChatCompletionRequest,
    settings: &LlmSettings,
    catalogue: &crate::catalogue::Snapshot,
    images: &crate::files::ImageLimits,
) -> Result<(ApiTurn, Answer), OpenAiError> {
    if req.n.is_some_and(|n| n != 1) {
        return Err(OpenAiError::invalid(
            "n",
            "invalid_value",
            "only n = 1 is supported",
        ));
    }
    // Whether the caller's role may use it is the turn start's to say (403), with the role
    // as that commit reads it.
    let Some(model) = catalogue.get(&req.model) else {
        return Err(OpenAiError::unknown_model(&req.model));
    };
    if req.messages.is_empty() || req.messages.len() > MAX_MESSAGES {
        return Err(OpenAiError::invalid(
            "messages",
            "invalid_value",
            format!("messages must hold 1 to {MAX_MESSAGES} messages"),
        ));
    }
    let client_tools = tools(req.tools.unwrap_or_default())?;
    let mut input = Vec::with_capacity(req.messages.len());
    let mut stored = Vec::with_capacity(req.messages.len());
    let mut called: Vec<String> = Vec::new();
    let mut image_count = 0;
    for (i, m) in req.messages.into_iter().enumerate() {
        let param = format!("messages[{i}]");
        let (text, urls) = content_of(m.content, &param)?;
        if !urls.is_empty() && m.role != MessageRole::User {
            return Err(OpenAiError::invalid(
                format!("{param}.content"),
                "invalid_value",
                "only user messages may carry images",
            ));
        }
        let (chat, row) = match m.role {
            MessageRole::System | MessageRole::Developer => (ChatMessage::system(text), None),
            MessageRole::User => {
                let images = super::images::images_of(urls, model, images, &param, image_count)?;
                image_count += images.len();
                let row = NewMessage::complete(uuid::Uuid::nil(), StoredRole::User, &text);
                (ChatMessage::user(text).with_images(images), Some(row))
            }
            MessageRole::Assistant => {
                let calls = calls_of(m.tool_calls.unwrap_or_default(), &param)?;
                called.extend(calls.iter().map(|c| c.id.clone()));
                let mut row = NewMessage::complete(uuid::Uuid::nil(), StoredRole::Assistant, &text);
                if !calls.is_empty() {
                    let kept: Vec<StoredToolCall> =
                        calls.iter().map(StoredToolCall::from_call).collect();
                    row.tool_calls = Some(json!(kept));
                }
                (ChatMessage::assistant_tool_calls(text, calls), Some(row))
            }
            MessageRole::Tool => {
                let id = m
                    .tool_call_id
                    .filter(|id| called.contains(id))
                    .ok_or_else(|| {
                        OpenAiError::invalid(
                        format!("{param}.tool_call_id"),
                        "invalid_value",
                        "a tool message must answer a tool call of an earlier assistant message",
                    )
                    })?;
                let mut row = NewMessage::complete(uuid::Uuid::nil(), StoredRole::Tool, &text);
                row.tool_call_id = Some(id.clone());
                (ChatMessage::tool_result(id, text), Some(row))
            }
            MessageRole::Function => {
                return Err(OpenAiError::invalid(
                    format!("{param}.role"),
                    "invalid_value",
                    "the `function` role is deprecated; use `tool`",
                ))
            }
        };
        input.push(chat);
        stored.extend(row);
    }
    let last = match input.last().map(|m| m.role) {
        Some(Role::User | Role::Tool) => stored.pop(),
        _ => None,
    }
    .ok_or_else(|| {
        OpenAiError::invalid(
            "messages",
            "invalid_value",
            "the last message must be from the user or a tool",
        )
    })?;
    let window = model
        .context_window
        .saturating_sub(u64::from(model.max_output));
    let size: u64 = std::iter::once(ChatMessage::system(settings.system_prompt.clone()))
        .chain(input.iter().cloned())
        .map(|m| message_tokens(&m))
        .sum();
    if size > window {
        return Err(OpenAiError::invalid(
            "messages",
            "context_length_exceeded",
            format!(
                "the messages take about {size} tokens; this model takes at most {window} \
                 with room for its answer"
            ),
        ));
    }
    let title = title(&stored, &last);
    let answer = Answer {
        model: req.model.clone(),
        stream: req.stream.unwrap_or(false),
        include_usage: req.stream_options.is_some_and(|o| o.include_usage),
    };
    let turn = ApiTurn {
        model: req.model,
        title,
        history: stored,
        last,
        input,
        client_tools,
        // The caller's, set by the route.
        key_scopes: None,
        assistant_id: None,
    };
    Ok((turn, answer))
}

/// A message's text (a string, or the text parts joined) and its image parts' URLs.
fn content_of(content: Option<Content>, param: &str) -> Result<(String, Vec<String>), OpenAiError> {
    let mut urls = Vec::new();
    let text = match content {
        None => String::new(),
        Some(Content::Text(s)) => s,
        Some(Content::Parts(parts)) => {
            let mut text = String::new();
            for p in parts {
                match p {
                    ContentPart::Text { text: t } => text.push_str(&t),
                    ContentPart::ImageUrl { image_url } => urls.push(image_url.url),
                    ContentPart::Unsupported => {
                        return Err(OpenAiError::invalid(
                            format!("{param}.content"),
                            "invalid_value",
                            "only text and image_url content is supported",
                        ))
                    }
                }
            }
            text
        }
    };
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(OpenAiError::invalid(
            format!("{param}.content"),
            "string_above_max_length",
            format!("a message may hold at most {MAX_MESSAGE_CHARS} characters"),
        ));
    }
    Ok((text, urls))
}

fn calls_of(calls: Vec<wire::ToolCall>, param: &str) -> Result<Vec<ToolCall>, OpenAiError> {
    if calls.len() > MAX_CALLS_PER_MESSAGE {
        return Err(OpenAiError::invalid(
            format!("{param}.tool_calls"),
            "invalid_value",
            format!("at most {MAX_CALLS_PER_MESSAGE} tool calls per message"),
        ));
    }
    calls
        .into_iter()
        .map(|c| {
            let id = c.id.filter(|id| (1..=200).contains(&id.len()));
            match id {
                Some(id) if valid_name(&c.function.name) => Ok(ToolCall {
                    id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                }),
                _ => Err(OpenAiError::invalid(
                    format!("{param}.tool_calls"),
                    "invalid_value",
                    "each tool call needs an id (1 to 200 characters) and a valid function name",
                )),
            }
        })
        .collect()
}

/// The client's tools, checked.
fn tools(tools: Vec<wire::Tool>) -> Result<Vec<ToolSpec>, OpenAiError> {
    if tools.len() > MAX_TOOLS {
        return Err(OpenAiError::invalid(
            "tools",
            "invalid_value",
            format!("at most {MAX_TOOLS} tools"),
        ));
    }
    let mut specs: Vec<ToolSpec> = Vec::with_capacity(tools.len());
    for (i, t) in tools.into_iter().enumerate() {
        let param = format!("tools[{i}]");
        let bad = |what: &str| OpenAiError::invalid(param.clone(), "invalid_value", what);
        if t.kind != "function" {
            return Err(bad("only `function` tools are supported"));
        }
        let f = t.function;
        if !valid_name(&f.name) || specs.iter().any(|s| s.name == f.name) {
            return Err(bad(
                "a function name must be unique and match ^[a-zA-Z0-9_-]{1,64}$",
            ));
        }
        let description = f.description.unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(bad("the description is too long"));
        }
        let parameters = f
            .parameters
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        if !parameters.is_object() || parameters.to_string().len() > MAX_SCHEMA_BYTES {
            return Err(bad(
                "parameters must be a JSON Schema object of at most 16 KiB",
            ));
        }
        specs.push(ToolSpec {
            name: f.name,
            description,
            parameters,
        });
    }
    Ok(specs)
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The stored conversation's title: the first words of the first user message.
fn title(stored: &[NewMessage], last: &NewMessage) -> String {
    let first = stored
        .iter()
        .chain(std::iter::once(last))
        .find(|m| m.role == StoredRole::User)
        .map(|m| m.content.trim())
        .unwrap_or("");
    let words: String = first.chars().take(60).collect();
    let words = crate::db::pg_safe_text(&words)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if words.is_empty() {
        "API call".to_owned()
    } else {
        format!("API: {words}")
    }
}
