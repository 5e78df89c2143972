//! `Idempotency-Key`: a retried request attaches to the turn the first one started. While
//! that turn runs the retry is told so (409); once it has ended, what it stored is replayed
//! as the turn's events. A key reused for a different message is refused (422).

use std::collections::HashMap;

use serde_json::Value;
use uuid::Uuid;

use super::context::StoredToolCall;
use super::events::{ErrorEvent, FinishReason, ToolCallEvent, ToolResultEvent, TurnEvent};
use super::turn::Agent;
use crate::db::models::idempotency::{self, IdempotencyKey};
use crate::db::models::message::{self, Message};
use crate::db::{self, models::turn};
use crate::error::ApiError;

impl Agent {
    /// `Some(events)` when `key` already started a turn that has ended (its replay); `None`
    /// when the key is new.
    pub async fn replay_duplicate(
        &self,
        user_id: Uuid,
        conversation_id: Uuid,
        key: &IdempotencyKey,
    ) -> Result<Option<Vec<TurnEvent>>, ApiError> {
        let mut conn = db::conn(&self.pool).await?;
        let Some(first) = idempotency::find(&mut conn, user_id, &key.key).await? else {
            return Ok(None);
        };
        if first.request_hash != key.request_hash || first.conversation_id != conversation_id {
            return Err(ApiError::unprocessable(
                "idempotency_key_reused",
                "this Idempotency-Key was already used for a different message",
            ));
        }
        if turn::active_turn(&mut conn, conversation_id).await? == Some(first.turn_id) {
            return Err(ApiError::conflict(
                "turn_in_progress",
                "this message is already being answered; reload the conversation to follow it",
            ));
        }
        let stored = message::list(&mut conn, conversation_id).await?;
        Ok(Some(replay(&stored, first.user_message_id)))
    }
}

/// The events of the turn that `user_message_id` started, rebuilt from what it stored.
fn replay(stored: &[Message], user_message_id: Uuid) -> Vec<TurnEvent> {
    let mut events = vec![TurnEvent::TurnStart {
        message_id: user_message_id,
    }];
    let start = stored.iter().position(|m| m.id == user_message_id);
    let turn = start.map_or(&[][..], |i| &stored[i + 1..]);
    let turn = turn
        .iter()
        .take_while(|m| m.role != "user")
        .collect::<Vec<_>>();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut last: Option<&Message> = None;
    for m in turn {
        match m.role.as_str() {
            "assistant" => {
                last = Some(m);
                if !m.content.is_empty() {
                    events.push(TurnEvent::TextDelta {
                        text: m.content.clone(),
                    });
                }
                let calls: Vec<StoredToolCall> = m
                    .tool_calls
                    .clone()
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                for c in calls {
                    names.insert(c.id.clone(), c.name.clone());
                    events.push(TurnEvent::ToolCall(Box::new(ToolCallEvent {
                        id: c.id,
                        name: c.name,
                        arguments: c.arguments,
                    })));
                }
            }
            _ => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let envelope: Value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
                events.push(TurnEvent::ToolResult(Box::new(ToolResultEvent {
                    name: names.get(&id).cloned().unwrap_or_default(),
                    id,
                    success: envelope["success"].as_bool().unwrap_or(false),
                    data: envelope.get("data").filter(|d| !d.is_null()).cloned(),
                    error: envelope["error"].as_str().map(str::to_owned),
                    duration_ms: m
                        .duration_ms
                        .and_then(|d| u64::try_from(d).ok())
                        .unwrap_or(0),
                })));
            }
        }
    }
    events.push(match last {
        Some(m) if m.status == "complete" => TurnEvent::Done {
            message_id: Some(m.id),
            finish_reason: FinishReason::Stop,
        },
        Some(m)
            if matches!(
                m.status_reason.as_deref(),
                Some("cancelled" | "client_disconnected" | "access_revoked")
            ) =>
        {
            TurnEvent::Done {
                message_id: Some(m.id),
                finish_reason: FinishReason::Cancelled,
            }
        }
        other => TurnEvent::Error(Box::new(ErrorEvent {
            code: other
                .and_then(|m| m.status_reason.clone())
                .unwrap_or_else(|| "unavailable".to_owned()),
            message: "the reply to this message did not complete".to_owned(),
        })),
    });
    events
}
