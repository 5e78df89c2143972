//! The OpenAPI 3.1 description of the whole API, generated from the handlers' `#[utoipa::path]`
//! annotations and the wire structs' `ToSchema` derives, served at `GET /api/openapi.json`.
//!
//! Annotations name only what is particular to a route; [`CommonResponses`] adds what every
//! route of a kind can answer (401 without a valid token, 403 for non-admins on `/api/admin`,
//! 400/413/415 for bodies, 404 for unknown ids, 503 when the database is down), so the codes
//! stay true without repeating them on every handler.

pub mod common;
pub mod openai;
pub mod schemas;

use std::sync::OnceLock;

use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::routes;
use common::CommonResponses;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "AgentChat API",
        description = "Multi-user LLM agent chat server. Errors are `{\"error\": {\"code\", \"message\"}}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        routes::health::healthz,
        routes::health::readyz,
        routes::metrics::metrics,
        serve,
        routes::auth::register,
        routes::auth::login,
        routes::auth::refresh,
        routes::auth::logout,
        routes::oidc::providers,
        routes::oidc::login,
        routes::oidc::callback,
        routes::me::me,
        routes::preferences::get,
        routes::preferences::update,
        routes::memory::list,
        routes::memory::add,
        routes::memory::settings,
        routes::memory::update,
        routes::memory::delete,
        routes::assistants::list,
        routes::admin::assistants::list,
        routes::admin::assistants::create,
        routes::admin::assistants::update,
        routes::admin::assistants::retire,
        routes::admin::assistants::versions,
        routes::auth::change_password,
        routes::jwks::jwks,
        routes::models::list,
        routes::conversations::list,
        routes::conversations::create,
        routes::conversation_read::get,
        routes::conversations::update,
        routes::conversation_export::export,
        routes::truncate::truncate,
        routes::conversations::delete,
        routes::messages::post_message,
        routes::messages::cancel,
        routes::approvals::list,
        routes::approvals::decide,
        routes::admin::approvals::list,
        routes::turn_events::events,
        routes::files::list,
        routes::files::download,
        routes::files::upload,
        routes::files::delete,
        routes::collections::status,
        routes::collections::search,
        routes::collections::list,
        routes::collections::create,
        routes::collections::get,
        routes::collections::update,
        routes::collections::delete,
        routes::collections::grants,
        routes::collections::pins,
        routes::collections::set_pins,
        routes::collection_files::upload,
        routes::collection_files::add_from_workspace,
        routes::collection_files::remove,
        routes::collection_files::retry,
        routes::collection_files::passage,
        routes::admin::users::list,
        routes::admin::users::create,
        routes::admin::users::update,
        routes::admin::user_delete::delete,
        routes::admin::user_password::reset,
        routes::admin::changes::list,
        routes::admin::conversations::get,
        routes::admin::roles::list,
        routes::admin::roles::put,
        routes::admin::tools::list,
        routes::admin::models::list,
        routes::admin::catalogue_edit::create_provider,
        routes::admin::catalogue_edit::replace_provider,
        routes::admin::catalogue_edit::delete_provider,
        routes::admin::catalogue_models::create_model,
        routes::admin::catalogue_models::replace_model,
        routes::admin::catalogue_models::delete_model,
        routes::admin::custom_tools::list,
        routes::admin::custom_tools::create,
        routes::admin::custom_tools::get,
        routes::admin::custom_tools::replace,
        routes::admin::custom_tools::delete,
        routes::admin::audit::list,
        routes::admin::usage::report,
        routes::admin::mcp_servers::list,
        routes::admin::mcp_servers::get,
        routes::admin::mcp_servers::create,
        routes::admin::mcp_servers::replace,
        routes::admin::mcp_servers::delete,
        routes::admin::mcp_servers::refresh,
        routes::admin::search_providers::list,
        routes::admin::search_providers::get,
        routes::admin::search_providers::create,
        routes::admin::search_providers::replace,
        routes::admin::search_providers::delete,
        routes::admin::search_queries::queries,
        routes::admin::role_search::get,
        routes::admin::role_search::put,
        routes::admin::role_sandbox::get,
        routes::admin::role_sandbox::put,
        routes::scim::list_users,
        routes::scim::create_user,
        routes::scim::get_user,
        routes::scim::replace_user,
        routes::scim::patch_user,
        routes::scim::delete_user,
        routes::scim::list_groups,
        routes::scim::create_group,
        routes::scim::get_group,
        routes::scim::replace_group,
        routes::scim::patch_group,
        routes::scim::delete_group,
        routes::keys::create,
        routes::keys::list,
        routes::keys::revoke,
        routes::admin::keys::list,
        routes::admin::keys::revoke,
        routes::shares::create,
        routes::shares::list,
        routes::share_read::read,
        routes::shares::update,
        routes::shares::revoke,
        routes::share_read::file,
        routes::share_read::fork_share,
        routes::share_read::fork_own,
        routes::admin::shares::list,
        routes::openai::completions::models,
        routes::openai::completions::chat_completions,
    ),
    components(schemas(
        crate::error::ErrorBody,
        // What `data` of a turn's server-sent events holds, and of a `/v1` stream.
        crate::turn::TurnEvent,
        crate::openapi::openai::OpenAiChunk
    )),
    modifiers(&CommonResponses),
    tags(
        (name = "auth", description = "Accounts and sessions"),
        (name = "me", description = "The caller"),
        (name = "conversations", description = "A user's own conversations and agent turns"),
        (name = "files", description = "The caller's workspace files"),
        (name = "knowledge", description = "Document collections the agent searches, their files and ingestion, citations"),
        (name = "sharing", description = "Read-only links to snapshots of conversations, their views, and continuing them as a copy"),
        (name = "approvals", description = "Tool calls waiting for a person's decision"),
        (name = "admin", description = "Admin-only resources"),
        (name = "keys", description = "Personal API keys for the OpenAI-compatible API"),
        (name = "openai", description = "The OpenAI-compatible API: an API key or access token as the bearer; errors in OpenAI's shape"),
        (name = "operations", description = "Probes, metrics, this description"),
        (name = "scim", description = "SCIM 2.0 provisioning by the identity provider (`scim.token`)"),
    )
)]
struct ApiDoc;

/// The description as a value (tests and tools may want it without a server).
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// The description rendered once: it never changes while the process runs.
fn rendered() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        document().to_pretty_json().unwrap_or_else(|e| {
            tracing::error!(error = %e, "rendering the OpenAPI description");
            String::from("{}")
        })
    })
}

/// Registers `/api/openapi.json` at the app's top (startup does, before the routes).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/openapi.json", web::get().to(serve));
}

/// This description (OpenAPI 3.1), no authentication needed.
#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 description of this API",
        content_type = "application/json", body = Object)))]
async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(rendered())
}

#[cfg(test)]
mod tests {
    /// Every successful JSON answer names its fields, so Schemathesis can check it: no 2xx
    /// response is a bare `{"type": "object"}` but this description itself. (SCIM's shared
    /// error answers stay loose: a malformed query there answers in the API's error shape.)
    #[test]
    fn no_answer_is_a_bare_object() {
        let doc = serde_json::to_value(super::document()).expect("the description serializes");
        let mut bare = Vec::new();
        let paths = doc["paths"].as_object().expect("paths");
        for (path, ops) in paths {
            for (method, op) in ops.as_object().into_iter().flatten() {
                let responses = op["responses"].as_object().into_iter().flatten();
                for (status, response) in responses.filter(|(s, _)| s.starts_with('2')) {
                    let contents = response["content"].as_object().into_iter().flatten();
                    for (_, content) in contents {
                        if content["schema"] == serde_json::json!({"type": "object"})
                            && path != "/api/openapi.json"
                        {
                            bare.push(format!("{method} {path} {status}"));
                        }
                    }
                }
            }
        }
        assert!(bare.is_empty(), "untyped answers: {bare:?}");
    }
}
