//! Black-box API tests: each test starts the real server on port 0 against a fresh
//! Postgres database of its own and talks HTTP to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod account_prefs;
mod admin;
mod admin_changes;
mod admin_manage;
mod admin_models;
mod admin_reading;
mod admission;
mod admission_deadline;
mod api_keys;
mod approvals;
mod assistants;
mod assistants_knowledge;
mod attachments;
mod auth;
mod budget;
mod budget_start;
mod catalogue_edit;
mod chat;
mod cleanup;
mod code_interpreter;
mod code_interpreter_hostile;
mod code_interpreter_hostile_tool;
mod code_interpreter_role_limits;
mod code_interpreter_share;
mod conversation_size;
mod conversations;
mod conversations_organize;
mod database;
mod durable;
mod fake_embeddings;
mod health;
mod history_cache;
mod hostile_access;
mod hostile_jwt;
mod hostile_paths;
mod hostile_secrets;
mod hostile_ssrf;
mod hostile_text;
mod images;
mod images_export;
mod images_history;
mod images_limits;
mod images_mcp;
mod images_resumed;
mod images_tools;
mod images_upload;
mod images_usage;
mod key_lifetime;
mod key_scopes;
mod knowledge;
mod knowledge_files;
mod knowledge_recall;
mod knowledge_restart;
mod knowledge_support;
mod llm_adapters;
mod lock_order;
mod mcp;
mod mcp_faults;
mod mcp_limits;
mod mcp_perf;
mod mcp_replicas;
mod memory;
mod model_catalogue;
mod model_fallback;
mod money_budget;
mod money_budget_images;
mod observability;
mod openai_api;
mod openai_keys;
mod openai_sdk;
mod openapi;
mod reattach;
mod rows_insert;
mod sandbox_jail;
mod schema_drift;
mod scim;
mod scim_okta;
mod search_bounds;
mod security_fixes;
mod security_round3;
mod security_sessions;
mod shares;
mod sso;
mod step_commits;
mod titles;
mod tokens;
mod tools;
mod turn_costs;
mod upload_cancel;
// Issue 41.5, 41.6 and observations: share reads bounded and counted, file digests.
mod share_bounds;
mod share_digest;

// h4-usage (issue 41.8/41.9/observations, 42.5): usage bounds, URL redaction, banner, readyz.
mod breaker_fairness;
mod sealed_keys;
mod start_banner;
mod usage_bounds;

// Issue 42 items 8-9 (browser loose ends): refusal wording, titles, assistant names, search, copies.
mod ui_loose_ends;

// Issue 42.4, 42.6 and 42.11: the OpenAPI bodies, docs/api.md against the routes, the
// default file store.
mod docs_api;
mod openapi_bodies;
mod workspace_default;

// Issue 42 items 1, 3, 7, 10 (h5-loose).
mod demo_math;
mod fallback_shown;
mod knowledge_admin;

// Issue 41 findings 1 (jobs) and 3: crash-looping files, run-on text, job time budget,
// fair scheduling and the storage quota.
mod knowledge_jobs;

// Issue 41 findings 1-2: hostile documents are read in a limited child process.
mod knowledge_bombs;

/// Not a test: the entry point of a second server process for the multi-process tests
/// (`budget::two_server_processes_*` re-runs this binary with this name).
#[test]
#[ignore = "runs only as the child server of multi-process tests"]
fn child_server_process() {
    let Ok(database_url) = std::env::var("AGENTCHAT_CHILD_DATABASE_URL") else {
        return;
    };
    // `hostile_secrets` reads the child's log lines (JSON, with span fields) for canaries.
    if std::env::var("AGENTCHAT_CHILD_LOG_JSON").is_ok() {
        agentchat::telemetry::install(agentchat::config::LogFormat::Json, None, "debug");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let mut settings = agentchat::config::Settings::load(None).unwrap();
        settings.database.url = agentchat::config::DatabaseUrl::new(database_url);
        settings.bind = "127.0.0.1:0".into();
        // The tests' files stay in a temporary directory, unless a test checks the default.
        if std::env::var_os("AGENTCHAT_WORKSPACE_DIR").is_none()
            && std::env::var_os("AGENTCHAT_CHILD_DEFAULT_WORKSPACE").is_none()
        {
            settings.tools.workspace_dir = std::env::temp_dir()
                .join(format!("agentchat-test-ws-child-{}", std::process::id()));
        }
        if settings.knowledge.extractor.is_none() {
            settings.knowledge.extractor = agentchat_tests::built_agentchat();
        }
        // As in `test_settings`: no title calls unless a test asks for them.
        if std::env::var("AGENTCHAT_AUTO_TITLES").is_err() {
            settings.llm.auto_titles = false;
        }
        let app = agentchat::startup::Application::build(settings)
            .await
            .unwrap();
        println!("CHILD_PORT={}", app.port());
        app.run_until_stopped().await.unwrap();
    });
}
// Issue 41.4, 41.7 and 42.2 (h2-scopes): key scopes for documents and memory, memory as the
// user's words, paid query embeddings, natural-language knowledge search.
mod key_scopes_data;
mod knowledge_budget;
mod memory_safety;

// Issue 45: web search as a governed tool (fake SearXNG, Brave and Tavily servers).
mod web_search;
mod web_search_admin;
mod web_search_faults;
mod web_search_rules;
mod web_search_share;
