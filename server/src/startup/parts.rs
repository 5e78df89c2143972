//! The parts of the application that take work to make before it serves: the database
//! created and migrated, the JWT secret, the MCP servers and the code interpreter's jail.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rand::RngCore;
use secrecy::ExposeSecret;

use crate::config::Settings;
use crate::db;
use crate::metrics::Metrics;
use crate::tools::mcp::{self, IdentityContext, IdentitySigner, McpManager};

/// Creates the database if asked and applies migrations, waiting a while for Postgres
/// to come up (containers often start together).
pub async fn prepare_database(settings: &Settings) -> anyhow::Result<()> {
    let url = settings.database.url.expose();
    let mut attempt = 0u32;
    loop {
        let result = async {
            if settings.database.create_if_missing {
                db::ensure_database_exists(url).await?;
            }
            db::run_migrations(url).await
        }
        .await;
        match result {
            Ok(()) => return Ok(()),
            Err(e) if attempt < 30 => {
                attempt += 1;
                let why = db::why_unreachable(url)
                    .await
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default();
                let error = crate::domain::scrub_urls(&format!("{e:#}{why}"));
                tracing::warn!(attempt, cause = db::connect_cause(&error), %error,
                    database = %settings.database.url.redacted(), "database not ready; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The configured secret, or the one generated on first start and kept in the database.
pub(super) async fn jwt_secret(settings: &Settings, pool: &db::Pool) -> anyhow::Result<Vec<u8>> {
    if let Some(s) = &settings.auth.jwt_secret {
        return Ok(s.expose_secret().as_bytes().to_vec());
    }
    let mut generated = vec![0u8; 64];
    rand::rngs::OsRng.fill_bytes(&mut generated);
    let mut conn = pool.get().await.context("connecting for the JWT secret")?;
    db::models::secret::get_or_create(&mut conn, "jwt_signing_key", generated)
        .await
        .context("loading the JWT secret")
}

/// The MCP servers: the identity key (generated once, kept in the database), then every
/// server of the config file and of the admin API, each connecting in the background.
pub(super) async fn mcp_manager(
    settings: &Settings,
    pool: &db::Pool,
) -> anyhow::Result<McpManager> {
    let generated = IdentitySigner::generate_pkcs8().map_err(anyhow::Error::msg)?;
    let mut conn = pool
        .get()
        .await
        .context("connecting for the MCP identity key")?;
    let der = db::models::secret::get_or_create(&mut conn, mcp::identity::SECRET_NAME, generated)
        .await
        .context("loading the MCP identity key")?;
    let signer = IdentitySigner::from_pkcs8(&der).map_err(anyhow::Error::msg)?;
    let manager = McpManager::new(
        Some(IdentityContext {
            signer,
            pool: pool.clone(),
        }),
        settings.llm.tool_output_cap_bytes,
        settings.tools.mcp.clone(),
    );
    for server in &settings.mcp_servers {
        manager.upsert(server.clone(), mcp::Source::Config);
    }
    let stored = db::models::mcp_server::list(&mut conn)
        .await
        .context("loading the MCP servers")?;
    for row in stored {
        if manager.server(&row.name).is_some() {
            tracing::warn!(mcp_server = %row.name, "an MCP server of the admin API has the name of a configured one; the config file wins");
            continue;
        }
        manager.upsert(mcp::stored::config_of(&row), mcp::Source::Api);
    }
    Ok(manager)
}

/// The code interpreter's backend: bubblewrap, probed once. A host where no jail can be made
/// keeps serving; the reason goes to the log, `/readyz`, the admin view and the
/// `agentchat_sandbox_isolation` gauge, and code is never run unjailed.
pub(super) async fn sandbox_backend(
    settings: &Settings,
    metrics: &Metrics,
) -> Arc<dyn crate::sandbox::Backend> {
    use crate::sandbox::{Backend, BubblewrapBackend, Isolation};
    let backend = BubblewrapBackend::from_settings(&settings.sandbox).await;
    let isolation = backend.isolation();
    for level in ["ok", "rlimits_only", "unavailable"] {
        let on = i64::from(level == isolation.level());
        metrics
            .sandbox_isolation
            .with_label_values(&[level])
            .set(on);
    }
    match &isolation {
        Isolation::Ok => tracing::info!("sandbox: ok (namespaces, seccomp, rlimits, cgroup)"),
        Isolation::RlimitsOnly => tracing::info!(
            "sandbox: rlimits only (namespaces, seccomp and rlimits; no delegated cgroup v2 for memory, pids and CPU per run)"
        ),
        Isolation::Unavailable(reason) => {
            tracing::warn!(%reason, "sandbox: unavailable, the code interpreter refuses to run code")
        }
    }
    Arc::new(backend)
}
