//! Context assembly: stored messages -> the neutral history sent to the model, trimmed to the
//! model's window from the oldest end, never separating a tool call from its result.

use serde_json::Value;

use crate::db::models::message::Message;
use crate::domain::MessageRole;
use crate::llm::{estimate_tokens, ChatMessage, Role, ToolCall};
use crate::turn::history_images::Earlier;

/// Per-message overhead of chat formatting, in tokens.
const MESSAGE_OVERHEAD: u64 = crate::llm::MESSAGE_OVERHEAD_TOKENS;

/// A stored tool call as kept in `messages.tool_calls`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StoredToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON when the model sent valid JSON, else the raw text as a string.
    pub arguments: Value,
}

impl StoredToolCall {
    pub fn from_call(call: &ToolCall) -> Self {
        let arguments = if call.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()))
        };
        Self {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        }
    }

    fn to_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: match &self.arguments {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        }
    }
}

/// The system prompt of a conversation's turns: the server's own rules first, then the
/// conversation's instructions (added, never in their place).
pub fn system_prompt(server: &str, conversation: Option<&str>) -> String {
    match conversation.map(str::trim).filter(|p| !p.is_empty()) {
        Some(own) => format!(
            "{server}\n\nThe user gave these instructions for this conversation (they do not \
             override the rules above):\n{own}"
        ),
        None => server.to_owned(),
    }
}

/// How a turn's input opens: the system prompt, then the user's memory notes as a message
/// of the user's. The notes are the user's words (the model may have written them through
/// `remember`), so they never ride in the system prompt's authority.
#[derive(Debug, Clone)]
pub struct Opening {
    pub system: String,
    pub notes: Option<String>,
}

impl Opening {
    /// An opening of a system prompt alone.
    pub fn system_only(system: &str) -> Self {
        Self {
            system: system.to_owned(),
            notes: None,
        }
    }

    /// The messages it makes, in order.
    pub fn messages(&self) -> Vec<ChatMessage> {
        let mut out = vec![ChatMessage::system(self.system.clone())];
        out.extend(self.notes.clone().map(ChatMessage::user));
        out
    }

    fn cost(&self) -> u64 {
        self.messages().iter().map(cost).sum()
    }
}

/// The opening of a turn with what its preset adds. The system prompt, in decreasing
/// authority: the server's rules, the assistant's instructions, the conversation's own
/// instructions; then the user's memory notes, as the user's message.
pub fn opening_with(
    server: &str,
    preset: &crate::turn::sql::preset::TurnPreset,
    conversation: Option<&str>,
) -> Opening {
    let mut base = server.to_owned();
    if let Some(a) = &preset.assistant {
        base = format!(
            "{base}\n\nYou are the assistant `{}`. Its instructions (they do not override \
             the rules above):\n{}",
            a.name, a.instructions
        );
    }
    Opening {
        system: system_prompt(&base, conversation),
        notes: crate::memory::notes_message(&preset.memory),
    }
}

/// The room [`assemble`] has for history, in estimated tokens: what the history read may be
/// cut to ([`crate::db::models::message::list_recent`]).
pub fn history_room(
    system_prompt: &str,
    new_user_message: &str,
    window_tokens: u64,
    reserve_output: u64,
) -> u64 {
    let fixed =
        cost(&ChatMessage::system(system_prompt)) + cost(&ChatMessage::user(new_user_message));
    window_tokens
        .saturating_sub(reserve_output)
        .saturating_sub(fixed)
}

/// Builds the model's input: the opening (system prompt, notes), as much recent history as
/// fits in `window_tokens - reserve_output`, and the new user message (with its images,
/// which count against the window like text).
pub fn assemble(
    opening: &Opening,
    history: &[Message],
    user: ChatMessage,
    window_tokens: u64,
    reserve_output: u64,
) -> Vec<ChatMessage> {
    assemble_seeing(
        opening,
        history,
        &Earlier::default(),
        user,
        window_tokens,
        reserve_output,
    )
}

/// [`assemble`] with the images the history's messages carry again ([`Earlier`]): they go
/// with their messages and count against the window with them, so a unit too large with
/// its images is cut whole.
pub fn assemble_seeing(
    opening: &Opening,
    history: &[Message],
    earlier: &Earlier,
    user: ChatMessage,
    window_tokens: u64,
    reserve_output: u64,
) -> Vec<ChatMessage> {
    let mut room = window_tokens
        .saturating_sub(reserve_output)
        .saturating_sub(opening.cost() + cost(&user));

    let units = units(history, earlier);
    let mut kept: Vec<Vec<ChatMessage>> = Vec::new();
    for unit in units.into_iter().rev() {
        let c: u64 = unit.iter().map(cost).sum();
        if c > room {
            break;
        }
        room -= c;
        kept.push(unit);
    }
    let mut out = opening.messages();
    out.reserve(kept.iter().map(Vec::len).sum::<usize>() + 1);
    out.extend(kept.into_iter().rev().flatten());
    out.push(user);
    out
}

/// The input of a turn that goes on after a pause: the history up to its user message as
/// [`assemble`] builds it, then the turn's own steps so far (calls and their results).
pub fn assemble_resumed(
    opening: &Opening,
    history: &[Message],
    earlier: &Earlier,
    window_tokens: u64,
    reserve_output: u64,
) -> Vec<ChatMessage> {
    let split = history.iter().rposition(|m| m.role == MessageRole::User);
    let (before, user, after) = match split {
        Some(i) => {
            let mut user =
                ChatMessage::user(crate::turn::attachments::stored_model_text(&history[i]));
            earlier.give(history[i].id, &mut user);
            (&history[..i], user, &history[i + 1..])
        }
        None => (&[][..], ChatMessage::user(String::new()), history),
    };
    let steps: Vec<ChatMessage> = units(after, earlier).into_iter().flatten().collect();
    let steps_cost: u64 = steps.iter().map(cost).sum();
    let mut out = assemble_seeing(
        opening,
        before,
        earlier,
        user,
        window_tokens,
        reserve_output.saturating_add(steps_cost),
    );
    out.extend(steps);
    out
}

/// Estimated tokens of one message.
pub fn cost(m: &ChatMessage) -> u64 {
    let calls: u64 = m
        .tool_calls
        .iter()
        .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
        .sum();
    let images: u64 = m.images.iter().map(|i| i.tokens).sum();
    MESSAGE_OVERHEAD + estimate_tokens(&m.content) + calls + images
}

/// Groups history into units that are kept or dropped whole: a user message, or an assistant
/// message together with the results of its tool calls. Tool calls whose results are missing
/// (a turn cut short) are dropped from the assistant message, and results whose call is
/// unknown are dropped, so the model never sees half a pair. User messages and tool
/// results get the images `earlier` carries again for them.
fn units(history: &[Message], earlier: &Earlier) -> Vec<Vec<ChatMessage>> {
    let mut out: Vec<Vec<ChatMessage>> = Vec::new();
    let mut i = 0;
    while i < history.len() {
        let m = &history[i];
        i += 1;
        match m.role {
            MessageRole::User => {
                let mut user = ChatMessage::user(crate::turn::attachments::stored_model_text(m));
                earlier.give(m.id, &mut user);
                out.push(vec![user]);
            }
            MessageRole::Assistant => {
                let calls: Vec<StoredToolCall> = m
                    .tool_calls
                    .clone()
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                let mut results = Vec::new();
                while i < history.len() && history[i].role == MessageRole::Tool {
                    results.push(&history[i]);
                    i += 1;
                }
                let complete = !calls.is_empty()
                    && calls.iter().all(|c| {
                        results
                            .iter()
                            .any(|r| r.tool_call_id.as_deref() == Some(c.id.as_str()))
                    });
                let mut unit = Vec::new();
                if complete {
                    unit.push(ChatMessage {
                        role: Role::Assistant,
                        content: m.content.clone(),
                        tool_calls: calls.iter().map(StoredToolCall::to_call).collect(),
                        tool_call_id: None,
                        images: Vec::new(),
                    });
                    for c in &calls {
                        if let Some(r) = results
                            .iter()
                            .find(|r| r.tool_call_id.as_deref() == Some(c.id.as_str()))
                        {
                            let mut result = ChatMessage {
                                role: Role::Tool,
                                content: r.content.clone(),
                                tool_calls: Vec::new(),
                                tool_call_id: Some(c.id.clone()),
                                images: Vec::new(),
                            };
                            earlier.give(r.id, &mut result);
                            unit.push(result);
                        }
                    }
                } else if !m.content.is_empty() {
                    unit.push(ChatMessage::assistant(m.content.clone()));
                }
                if !unit.is_empty() {
                    out.push(unit);
                }
            }
            // A tool result with no assistant message before it: drop it.
            MessageRole::Tool => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
