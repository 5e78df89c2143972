//! Black-box API tests: each test starts the real server on port 0 against a fresh
//! Postgres database of its own and talks HTTP to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod auth;
mod chat;
mod conversations;
mod database;
mod health;
mod llm_adapters;
mod tokens;
