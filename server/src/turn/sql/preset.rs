//! What a turn applies beside the role: the conversation's assistant at its current version
//! (and whether the user may still use it) and the user's memory notes, when memory is on for
//! the user and the conversation. Read with the account and the role in one statement
//! ([`crate::turn::sql::inputs`]).

use diesel::sql_types::{Array, Bool, Int4, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use uuid::Uuid;

use crate::assistants::AssistantParams;

/// The assistant and memory a turn applies.
#[derive(Debug, Clone, Default)]
pub struct TurnPreset {
    pub assistant: Option<AssistantPreset>,
    /// The user's notes, oldest first (empty while memory is off).
    pub memory: Vec<String>,
}

/// An assistant as a turn applies it.
#[derive(Debug, Clone)]
pub struct AssistantPreset {
    pub id: Uuid,
    pub name: String,
    pub version: i32,
    pub instructions: String,
    /// `None`: the conversation's (or the server's default) model.
    pub model: Option<String>,
    /// The allowlist the role's is narrowed to.
    pub tools: Vec<String>,
    pub params: AssistantParams,
    /// Not retired, and visible to the user's role now.
    pub usable: bool,
}

/// The most one answer may hold: the model's cap `model_max`, lowered by the assistant's.
pub fn output_cap(assistant: Option<&AssistantPreset>, model_max: u32) -> u32 {
    assistant
        .and_then(|a| a.params.max_output_tokens)
        .map_or(model_max, |cap| cap.min(model_max))
}

/// The preset's columns, as [`crate::turn::sql::inputs`] selects them.
#[derive(QueryableByName)]
pub(super) struct Row {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    assistant_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<Int4>)]
    version: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    instructions: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    model: Option<String>,
    #[diesel(sql_type = Nullable<Array<Text>>)]
    #[diesel(column_name = assistant_tools)]
    tools: Option<Vec<String>>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    params: Option<serde_json::Value>,
    #[diesel(sql_type = Bool)]
    usable: bool,
    #[diesel(sql_type = Array<Text>)]
    memory: Vec<String>,
}

impl Row {
    pub(super) fn preset(self) -> TurnPreset {
        let assistant = match (self.assistant_id, self.version) {
            (Some(id), Some(version)) => Some(AssistantPreset {
                id,
                name: self.name.unwrap_or_default(),
                version,
                instructions: self.instructions.unwrap_or_default(),
                model: self.model,
                tools: self.tools.unwrap_or_default(),
                params: self
                    .params
                    .and_then(|p| serde_json::from_value(p).ok())
                    .unwrap_or_default(),
                usable: self.usable,
            }),
            _ => None,
        };
        TurnPreset {
            assistant,
            memory: self.memory,
        }
    }
}
