//! SCIM wire format (RFC 7643 resources, RFC 7644 messages): what providers send and what
//! we answer. Unknown attributes (extensions, phone numbers, ...) are accepted and ignored.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// `true`/`false`, or Entra ID's `"True"`/`"False"`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum BoolLike {
    Bool(bool),
    Text(TextBool),
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub enum TextBool {
    #[serde(alias = "true", alias = "TRUE")]
    True,
    #[serde(alias = "false", alias = "FALSE")]
    False,
}

impl BoolLike {
    pub fn get(self) -> bool {
        matches!(self, Self::Bool(true) | Self::Text(TextBool::True))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NameIn {
    pub given_name: Option<String>,
    pub family_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EmailIn {
    pub value: String,
    pub primary: Option<BoolLike>,
}

/// A `User` as providers POST and PUT it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserIn {
    pub user_name: String,
    pub external_id: Option<String>,
    pub name: Option<NameIn>,
    pub display_name: Option<String>,
    pub emails: Option<Vec<EmailIn>>,
    pub active: Option<BoolLike>,
}

/// The primary e-mail, else the first.
pub fn primary_email(emails: &[EmailIn]) -> Option<String> {
    emails
        .iter()
        .find(|e| e.primary.is_some_and(BoolLike::get))
        .or_else(|| emails.first())
        .map(|e| e.value.clone())
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub resource_type: &'static str,
    pub created: DateTime<Utc>,
    pub last_modified: DateTime<Utc>,
    pub location: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NameOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_name: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EmailOut {
    pub value: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub primary: bool,
}

/// A member of a group, or a group of a user.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Reference {
    pub value: Uuid,
    pub display: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserOut {
    pub schemas: [&'static str; 1],
    pub id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub user_name: String,
    pub name: NameOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub emails: Vec<EmailOut>,
    pub active: bool,
    pub groups: Vec<Reference>,
    pub meta: Meta,
}

/// A member as providers send it (`{"value": "<user id>"}`).
#[derive(Debug, Clone, Deserialize)]
pub struct MemberIn {
    pub value: String,
}

/// A `Group` as providers POST and PUT it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupIn {
    pub display_name: String,
    pub external_id: Option<String>,
    pub members: Option<Vec<MemberIn>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupOut {
    pub schemas: [&'static str; 1],
    pub id: Uuid,
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Left out when the provider asked `excludedAttributes=members`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<Reference>>,
    pub meta: Meta,
}

/// `ListResponse`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResponse<T> {
    pub schemas: [&'static str; 1],
    pub total_results: i64,
    pub start_index: i64,
    pub items_per_page: usize,
    #[serde(rename = "Resources")]
    pub resources: Vec<T>,
}

/// One PATCH operation; `value` takes many shapes, so it stays JSON until applied.
#[derive(Debug, Clone, Deserialize)]
pub struct PatchOperation {
    pub op: String,
    pub path: Option<String>,
    pub value: Option<serde_json::Value>,
}

/// `PatchOp` request.
#[derive(Debug, Clone, Deserialize)]
pub struct PatchRequest {
    #[serde(rename = "Operations")]
    pub operations: Vec<PatchOperation>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorOut {
    pub schemas: [&'static str; 1],
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scim_type: Option<&'static str>,
    pub detail: String,
}
