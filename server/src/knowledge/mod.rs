//! Knowledge: document collections the agent searches (DESIGN §13). Files are extracted
//! (`extract`), cut into token-sized chunks with byte offsets (`chunking`), embedded and
//! stored on pgvector by a durable job (`jobs`, `embed_step`), and found again by
//! `search_knowledge` (`search`, `tool`): hybrid vector + full-text search inside the
//! caller's granted collections, the grant inside the SQL. Answers cite the chunks they
//! used (`citations`). `schema` decides at start whether the database can hold vectors at
//! all; `collections` and `documents` are the API's SQL.

mod chunk_store;
pub mod chunking;
pub mod citations;
pub mod collections;
pub mod documents;
mod embed_budget;
mod embed_step;
pub mod error;
pub mod extract;
pub mod job_claim;
mod job_end;
mod job_extract;
mod job_watch;
pub mod jobs;
pub mod pins;
pub mod quota;
pub mod schema;
pub mod search;
pub mod tool;

use std::sync::Arc;

use tokio::sync::Notify;
use uuid::Uuid;

use crate::budget::Clock;
use crate::config::KnowledgeSettings;
use crate::db::Pool;
use crate::llm::embeddings::EmbeddingModel;

pub use error::KnowledgeError;
pub use schema::Availability;

/// Everything knowledge needs, shared by the routes, the tool and the ingestion workers.
pub struct Knowledge {
    pub pool: Pool,
    pub settings: KnowledgeSettings,
    /// The model new chunks are embedded with, and queries too.
    pub model: Arc<EmbeddingModel>,
    /// Whether this database can hold collections (pgvector), decided at start.
    pub availability: Availability,
    /// This server process (a job's lease names it).
    pub process_id: Uuid,
    pub clock: Clock,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Wakes the workers when a file is added here (other replicas poll).
    wake: Notify,
}

impl Knowledge {
    pub fn new(
        pool: Pool,
        settings: KnowledgeSettings,
        model: Arc<EmbeddingModel>,
        availability: Availability,
        process_id: Uuid,
        clock: Clock,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Self {
        Self {
            pool,
            settings,
            model,
            availability,
            process_id,
            clock,
            metrics,
            wake: Notify::new(),
        }
    }

    /// `Ok` when collections can be used here, else why not.
    pub fn usable(&self) -> Result<(), KnowledgeError> {
        match &self.availability {
            Availability::Ready { .. } => Ok(()),
            Availability::Off(reason) => Err(KnowledgeError::Unavailable(reason.clone())),
        }
    }

    /// Tells this process's workers there is a job.
    pub fn wake_workers(&self) {
        self.wake.notify_waiters();
    }

    /// A connection for a job's step. Jobs run on the shared shard, whose one or two
    /// connections another job may hold through a whole extraction: a job waits its turn
    /// there (up to [`JOB_CONNECTION_WAIT`]) instead of failing at the request path's short
    /// acquire timeout.
    pub(crate) async fn job_connection(
        &self,
    ) -> Result<crate::db::PooledConn, crate::db::PoolError> {
        self.pool.get_within(JOB_CONNECTION_WAIT).await
    }
}

/// How long a job's step waits for a connection before it pauses.
const JOB_CONNECTION_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// `[1.5,2,...]`: a vector as pgvector's text input reads it (bound as text and cast in
/// SQL, so no client library has to know the type).
pub(crate) fn vector_literal(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
    s
}

/// Knowledge for this process: the embedding model of the settings, the database checked
/// (and prepared) for vectors, files embedded with another model queued again. Workers
/// start with [`jobs::spawn_workers`] once the server runs.
pub async fn start(
    settings: &crate::config::Settings,
    pool: &Pool,
    process_id: Uuid,
    clock: Clock,
    metrics: Arc<crate::metrics::Metrics>,
) -> anyhow::Result<Arc<Knowledge>> {
    let providers = if settings.providers.is_empty() {
        vec![crate::catalogue::legacy_provider(&settings.llm)]
    } else {
        settings.providers.clone()
    };
    let model = EmbeddingModel::build(
        &settings.knowledge.embedding_model,
        &settings.embedding_models,
        &providers,
    )
    .map_err(|e| anyhow::anyhow!("knowledge.embedding_model: {e}"))?;
    let availability = match pool.get().await {
        Ok(mut conn) => {
            let a = schema::prepare(&mut conn, &settings.knowledge, model.dimensions).await;
            if let Availability::Ready { .. } = a {
                match documents::requeue_for_model(&mut conn, &model.name).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(files = n, model = %model.name,
                        "the embedding model changed: re-indexing files"),
                    Err(e) => {
                        tracing::warn!(error = %e, "files could not be queued for re-indexing")
                    }
                }
            }
            a
        }
        Err(e) => Availability::Off(format!(
            "Collections are off: the database could not be reached at start ({e})."
        )),
    };
    match &availability {
        Availability::Ready { pgvector } => {
            tracing::info!(%pgvector, model = %model.name, "knowledge collections are on")
        }
        Availability::Off(reason) => tracing::warn!(%reason, "knowledge collections are off"),
    }
    Ok(Arc::new(Knowledge::new(
        pool.clone(),
        settings.knowledge.clone(),
        model,
        availability,
        process_id,
        clock,
        metrics,
    )))
}
