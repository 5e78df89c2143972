//! What a turn reports while it runs: the SSE events of the API contract.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    MaxIterations,
    BudgetExhausted,
    ToolFailures,
    Cancelled,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::MaxIterations => "max_iterations",
            Self::BudgetExhausted => "budget_exhausted",
            Self::ToolFailures => "tool_failures",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One event of a turn, in the order the contract gives.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    TurnStart {
        message_id: Uuid,
    },
    TextDelta {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        id: String,
        name: String,
        success: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        duration_ms: u64,
    },
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    Done {
        message_id: Option<Uuid>,
        finish_reason: FinishReason,
    },
    Error {
        code: String,
        message: String,
    },
}

impl TurnEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TurnStart { .. } => "turn_start",
            Self::TextDelta { .. } => "text_delta",
            Self::ToolCall { .. } => "tool_call",
            Self::ToolResult { .. } => "tool_result",
            Self::Usage { .. } => "usage",
            Self::Done { .. } => "done",
            Self::Error { .. } => "error",
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
