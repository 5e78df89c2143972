//! A turn rebuilt from what it stored, with the same event ids as its live stream
//! ([`crate::turn::turn_log`]): each committed step is one text delta (the rest of its text after
//! the reader's position), its usage, tool calls and results; an ended turn adds its final
//! event. Also `Idempotency-Key`: a retried request follows the turn the first one started.

use std::collections::HashMap;

use serde_json::Value;
use uuid::Uuid;

use crate::auth::token::SignedToken;
use crate::db::models::idempotency::{self, IdempotencyKey};
use crate::db::models::message::Message;
use crate::db::models::user::Rejection;
use crate::domain::{MessageRole, MessageStatus};
use crate::turn::context::StoredToolCall;
use crate::turn::engine::TurnEngine;
use crate::turn::error::TurnError;
use crate::turn::events::{ErrorEvent, ToolCallEvent, ToolResultEvent, TurnEvent};
use crate::turn::sql::end as turn_end;
use crate::turn::turn_log::{call_pos, result_pos, usage_pos, EventId};

/// A turn as Postgres has it.
pub struct StoredTurn {
    pub turn_id: Uuid,
    /// Its conversation is still claimed by it (it runs, here or on another process).
    pub running: bool,
    messages: Vec<Message>,
    end: Option<Value>,
}

/// Loads the user's turn (`None`: no such turn, or not theirs).
pub async fn load(
    conn: &mut diesel_async::AsyncPgConnection,
    user_id: Uuid,
    conversation_id: Uuid,
    turn_id: Uuid,
) -> diesel::QueryResult<Option<StoredTurn>> {
    let Some(status) = turn_end::status(conn, user_id, conversation_id, turn_id).await? else {
        return Ok(None);
    };
    let messages = turn_end::messages(conn, conversation_id, status.seq).await?;
    Ok(Some(StoredTurn {
        turn_id,
        running: status.running && status.end.is_none(),
        messages,
        end: status.end,
    }))
}

impl StoredTurn {
    /// Steps stored whole (each assistant message is a step, committed with its results).
    pub fn steps(&self) -> u32 {
        let n = self
            .messages
            .iter()
            .filter(|m| m.role == MessageRole::Assistant)
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Where a paused turn goes on: its last step, that step's text length, its calls and
    /// the results stored so far (the decided calls' results come after them).
    pub fn paused_step(&self) -> (u32, u64, u64, u64) {
        let Some(i) = self
            .messages
            .iter()
            .rposition(|m| m.role == MessageRole::Assistant)
        else {
            return (self.steps(), 0, 0, 0);
        };
        let m = &self.messages[i];
        let calls = m
            .tool_calls
            .clone()
            .and_then(|v| serde_json::from_value::<Vec<StoredToolCall>>(v).ok())
            .map_or(0, |c| c.len() as u64);
        let results = self.messages.len().saturating_sub(i + 1) as u64;
        (self.steps(), m.content.len() as u64, calls, results)
    }

    /// Every stored event after `after`, in order.
    pub fn events_after(&self, after: Option<EventId>) -> Vec<(EventId, TurnEvent)> {
        let mut out = Vec::new();
        if after.is_none() {
            out.push((
                EventId::Start,
                TurnEvent::TurnStart {
                    message_id: self.turn_id,
                },
            ));
        }
        let mut step = 0u32;
        let mut names: HashMap<String, String> = HashMap::new();
        let mut current: Option<(u64, u64, u64)> = None; // (text length, calls, results)
        let mut last: Option<&Message> = None;
        for m in &self.messages {
            let skip = |step: u32| match after {
                Some(EventId::At { step: s, pos }) if s == step => Some(pos),
                Some(EventId::At { step: s, .. }) if s > step => None,
                Some(EventId::End) => None,
                _ => Some(0),
            };
            if m.role == MessageRole::Assistant {
                step += 1;
                last = Some(m);
                let len = m.content.len() as u64;
                let calls: Vec<StoredToolCall> = m
                    .tool_calls
                    .clone()
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                current = Some((len, calls.len() as u64, 0));
                let Some(skip) = skip(step) else {
                    calls
                        .into_iter()
                        .for_each(|c| drop(names.insert(c.id, c.name)));
                    continue;
                };
                if len > skip {
                    let mut from = usize::try_from(skip).unwrap_or(usize::MAX);
                    while from > 0 && !m.content.is_char_boundary(from) {
                        from -= 1;
                    }
                    let text = m.content.get(from..).unwrap_or_default().to_owned();
                    out.push((at(step, len), TurnEvent::TextDelta { text }));
                }
                if let (Some(i), Some(o)) = (m.input_tokens, m.output_tokens) {
                    if usage_pos(len) > skip {
                        out.push((
                            at(step, usage_pos(len)),
                            TurnEvent::Usage {
                                input_tokens: u64::try_from(i).unwrap_or(0),
                                output_tokens: u64::try_from(o).unwrap_or(0),
                            },
                        ));
                    }
                }
                for (i, c) in calls.into_iter().enumerate() {
                    names.insert(c.id.clone(), c.name.clone());
                    let pos = call_pos(len, i as u64);
                    if pos > skip {
                        out.push((
                            at(step, pos),
                            TurnEvent::ToolCall(Box::new(ToolCallEvent {
                                id: c.id,
                                name: c.name,
                                arguments: c.arguments,
                            })),
                        ));
                    }
                }
            } else if let Some((len, calls, results)) = current.as_mut() {
                let pos = result_pos(*len, *calls, *results);
                *results += 1;
                if skip(step).is_some_and(|skip| pos > skip) {
                    out.push((at(step, pos), result_event(m, &names)));
                }
            }
        }
        if !self.running && after != Some(EventId::End) {
            out.push((EventId::End, self.end_event(last)));
        }
        out
    }

    /// The recorded final event, or (a turn ended without recording it: its process died,
    /// or it could not be stored) an error naming why, as far as the messages tell.
    fn end_event(&self, last: Option<&Message>) -> TurnEvent {
        if let Some(e) = self
            .end
            .clone()
            .and_then(|v| serde_json::from_value::<TurnEvent>(v).ok())
        {
            return e;
        }
        let code = last
            .filter(|m| m.status == MessageStatus::Incomplete)
            .and_then(|m| m.status_reason.clone())
            .unwrap_or_else(|| "interrupted".to_owned());
        TurnEvent::Error(Box::new(ErrorEvent {
            code,
            message: "the reply to this message did not complete".to_owned(),
        }))
    }
}

fn at(step: u32, pos: u64) -> EventId {
    EventId::At { step, pos }
}

fn result_event(m: &Message, names: &HashMap<String, String>) -> TurnEvent {
    let id = m.tool_call_id.clone().unwrap_or_default();
    let envelope: Value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
    TurnEvent::ToolResult(Box::new(ToolResultEvent {
        name: names.get(&id).cloned().unwrap_or_default(),
        id,
        success: envelope["success"].as_bool().unwrap_or(false),
        data: envelope.get("data").filter(|d| !d.is_null()).cloned(),
        error: envelope["error"].as_str().map(str::to_owned),
        duration_ms: m
            .duration_ms
            .and_then(|d| u64::try_from(d).ok())
            .unwrap_or(0),
    }))
}

/// `Some(turn)` when `key` already started a turn (the retry follows it, running or
/// ended); `None` when the key is new.
pub(crate) async fn duplicate(
    engine: &TurnEngine,
    token: &SignedToken,
    conversation_id: Uuid,
    key: &IdempotencyKey,
) -> Result<Option<Uuid>, TurnError> {
    let mut conn = crate::db::conn(&engine.pool).await?;
    let Some(first) = idempotency::find(&mut conn, token.user_id, &key.key).await? else {
        return Ok(None);
    };
    // A replay shows the turn as a new one would: only to an account that is still
    // admitted (a new turn is checked in its start's first round trip instead).
    match crate::db::models::user::auth_state(&mut conn, token.user_id).await? {
        Some(account) => account.admits(token.token_version)?,
        None => return Err(Rejection::NoAccount.into()),
    }
    if first.request_hash != key.request_hash || first.conversation_id != conversation_id {
        return Err(TurnError::IdempotencyKeyReused);
    }
    Ok(Some(first.user_message_id))
}
