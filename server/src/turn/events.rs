//! What a turn reports while it runs: the SSE events of the API contract.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    MaxIterations,
    BudgetExhausted,
    ToolFailures,
    Cancelled,
    /// Paused: a call waits for a person's decision (`approval_required` said which).
    AwaitingApproval,
    /// The model called tools of an API client, which runs them and continues.
    ToolCalls,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::MaxIterations => "max_iterations",
            Self::BudgetExhausted => "budget_exhausted",
            Self::ToolFailures => "tool_failures",
            Self::Cancelled => "cancelled",
            Self::AwaitingApproval => "awaiting_approval",
            Self::ToolCalls => "tool_calls",
        }
    }
}

/// One event of a turn, in the order the contract gives.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    TurnStart {
        message_id: Uuid,
    },
    TextDelta {
        text: String,
    },
    // Boxed, like `ToolResult` and `Error`: the rare large variants would otherwise size
    // every slot of every turn's event channel (a 32-slot block per open stream).
    ToolCall(Box<ToolCallEvent>),
    ToolResult(Box<ToolResultEvent>),
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    Done {
        message_id: Option<Uuid>,
        finish_reason: FinishReason,
    },
    Error(Box<ErrorEvent>),
    ApprovalRequired(Box<ApprovalRequiredEvent>),
}

/// A call waits for a decision before it runs.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalRequiredEvent {
    pub approval_id: Uuid,
    pub tool_call_id: String,
    pub name: String,
    /// The arguments exactly as they will run if approved.
    pub arguments: Value,
    /// `user` (the person chatting) or `admin`.
    pub approver: crate::domain::Approver,
    /// The MCP server of the tool, for MCP tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// The turn failed.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorEvent {
    pub code: String,
    pub message: String,
}

/// The model asked for a tool.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolCallEvent {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// A tool call finished.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolResultEvent {
    pub id: String,
    pub name: String,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl TurnEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TurnStart { .. } => "turn_start",
            Self::TextDelta { .. } => "text_delta",
            Self::ToolCall(_) => "tool_call",
            Self::ToolResult(_) => "tool_result",
            Self::Usage { .. } => "usage",
            Self::Done { .. } => "done",
            Self::Error(_) => "error",
            Self::ApprovalRequired(_) => "approval_required",
        }
    }

    /// The JSON payload (it repeats the name as `type`, handy for clients that
    /// read the data alone).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"type":"error","code":"internal","message":"event could not be encoded"}"#
                .to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxed_variants_keep_the_flat_wire_format() {
        let e = TurnEvent::ToolResult(Box::new(ToolResultEvent {
            id: "c1".into(),
            name: "calculator".into(),
            success: true,
            data: Some(serde_json::json!({"value": 2})),
            error: None,
            duration_ms: 3,
        }));
        assert_eq!(e.name(), "tool_result");
        let v: Value = serde_json::from_str(&e.to_json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "tool_result", "id": "c1", "name": "calculator",
                               "success": true, "data": {"value": 2}, "duration_ms": 3})
        );
    }

    #[test]
    fn an_event_is_small() {
        // Every open stream holds a block of 32 of these; a text delta is a String.
        assert!(std::mem::size_of::<TurnEvent>() <= 32);
    }
}
