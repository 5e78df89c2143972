//! Rows and the queries that read and write them, one file per table.

pub mod admin_apply;
pub mod admin_change;
pub mod api_key;
pub mod audit;
pub mod budget;
pub mod budget_cpu;
pub mod budget_early;
pub mod budget_money;
mod budget_tokens;
pub mod conversation;
pub mod custom_tool;
pub mod idempotency;
pub mod identity;
pub mod mcp_server;
pub mod message;
pub mod message_fallback;
pub mod message_recent;
pub mod message_window;
pub mod preferences;
pub mod refresh_token;
pub mod role;
pub mod sandbox_run;
pub mod scim;
pub mod secret;
pub mod usage;
pub mod user;
pub mod user_change;

diesel::define_sql_function!(
    /// SQL `lower(text)`, for case-insensitive usernames.
    fn lower(x: diesel::sql_types::Text) -> diesel::sql_types::Text
);

/// True when `e` is a unique-constraint violation.
pub fn is_unique_violation(e: &diesel::result::Error) -> bool {
    matches!(
        e,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}
