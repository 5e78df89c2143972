//! AgentChat: a multi-user LLM agent chat server.

pub mod agent;
pub mod auth;
pub mod banner;
pub mod budget;
pub mod config;
pub mod db;
pub mod error;
pub mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub mod llm;
pub mod metrics;
pub mod observe;
pub mod openapi;
pub mod routes;
pub mod scim;
pub mod security;
pub mod shard;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod tools;
