//! AgentChat: a multi-user LLM agent chat server.

pub mod accounts;
pub mod assistants;
pub mod auth;
pub mod banner;
pub mod budget;
pub mod catalogue;
pub mod cluster;
pub mod config;
pub mod db;
pub mod domain;
pub mod error;
pub mod extract;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub mod knowledge;
pub mod llm;
pub mod memory;
pub mod metrics;
pub mod observe;
pub mod openapi;
pub mod routes;
pub mod sandbox;
pub mod scim;
pub mod security;
pub mod shard;
pub mod sharing;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod tools;
pub mod turn;
pub mod websearch;

#[cfg(test)]
mod layering_tests;
