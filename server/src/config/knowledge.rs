//! `[knowledge]` and `[[embedding_models]]`: document collections, how files are cut into
//! chunks, and the embedding model that turns chunks into vectors. Embedding models live in
//! the model catalogue beside the chat models and use its `[[providers]]` (or, without
//! them, the `[llm]` endpoint as provider `default`); the built-in `demo-embed` needs none.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The built-in offline embedder's name (feature hashing, see `llm::demo_embed`).
pub const DEMO_EMBEDDING_MODEL: &str = "demo-embed";

/// `[knowledge]` in the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnowledgeSettings {
    /// Collections on or off. On, they still need the pgvector extension on the database;
    /// without it the server says why and everything else works.
    pub enabled: bool,
    /// The `[[embedding_models]]` entry files are embedded with (or `demo-embed`). Changing
    /// it re-indexes every file as a job.
    pub embedding_model: String,
    /// Size of a chunk, in tokens (cl100k).
    pub chunk_tokens: usize,
    /// Tokens each chunk shares with the one before it.
    pub chunk_overlap_tokens: usize,
    /// Largest file one may add.
    pub max_file_bytes: usize,
    /// Largest text extraction may make of one file.
    pub max_text_bytes: usize,
    /// Files one collection may hold.
    pub max_files_per_collection: i64,
    /// Collections one user may own.
    pub max_collections_per_user: i64,
    /// Chunks sent to the embeddings endpoint in one request.
    pub embed_batch: usize,
    /// Ingestion jobs one server process runs at once.
    pub workers: usize,
    /// A job is claimed at most this often: a failing embeddings endpoint is retried until
    /// then, and a file whose process died this often (a crash while reading it) is set aside
    /// as failed instead of crashing every replica again.
    pub max_attempts: i32,
    /// Longest one claim of a job may run before its file fails: no file holds a worker for
    /// ever.
    pub job_timeout_secs: u64,
    /// Bytes of collection files one user may have uploaded (their current versions),
    /// counted over every collection; 0: no limit.
    pub user_quota_bytes: i64,
    /// Nearest neighbours less similar than this (cosine) are not results: a vector search
    /// always finds *something*, and an unrelated passage only misleads the model.
    pub min_similarity: f64,
    /// Wall time one file's extraction may take, in seconds. PDFs and HTML are read in a
    /// child process (`extract-document`), killed at this deadline.
    pub extract_timeout_secs: u64,
    /// CPU time that child may use, in seconds.
    pub extract_cpu_secs: u64,
    /// Memory (address space) that child may use, in MiB.
    pub extract_memory_mb: u64,
    /// The program run as that child; unset: this server's own executable.
    pub extractor: Option<String>,
}

impl Default for KnowledgeSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            embedding_model: DEMO_EMBEDDING_MODEL.to_owned(),
            chunk_tokens: 300,
            chunk_overlap_tokens: 40,
            max_file_bytes: 20 * 1024 * 1024,
            max_text_bytes: 8 * 1024 * 1024,
            max_files_per_collection: 1000,
            max_collections_per_user: 50,
            embed_batch: 64,
            workers: 2,
            max_attempts: 5,
            job_timeout_secs: 600,
            user_quota_bytes: 100 * 1024 * 1024,
            min_similarity: 0.1,
            extract_timeout_secs: 60,
            extract_cpu_secs: 30,
            extract_memory_mb: 1024,
            extractor: None,
        }
    }
}

/// One embedding model of the catalogue (`[[embedding_models]]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingModelConfig {
    pub name: String,
    /// The `[[providers]]` entry (kind `openai`: an OpenAI-compatible `/embeddings`).
    pub provider: String,
    /// The provider's id of the model; empty: `name`.
    #[serde(default)]
    pub upstream_model: String,
    /// Length of its vectors (1..=2000, what an HNSW index takes).
    pub dimensions: usize,
    /// Price per million input tokens, as a decimal string (`"0.02"`); unset: free.
    #[serde(default, deserialize_with = "super::catalogue::exact_opt")]
    pub price_input: Option<Decimal>,
    #[serde(default = "default_currency")]
    pub currency: String,
}

fn default_currency() -> String {
    "USD".to_owned()
}

impl EmbeddingModelConfig {
    /// The id sent upstream.
    pub fn upstream(&self) -> &str {
        if self.upstream_model.is_empty() {
            &self.name
        } else {
            &self.upstream_model
        }
    }
}

impl KnowledgeSettings {
    /// Bounds that keep a job sane; the model named must exist.
    pub fn validate(
        &self,
        models: &[EmbeddingModelConfig],
        providers: &[&str],
    ) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| Err(ConfigError::invalid(key, reason));
        if !(16..=8000).contains(&self.chunk_tokens) {
            return bad("knowledge.chunk_tokens", "must be 16..=8000");
        }
        if self.chunk_overlap_tokens >= self.chunk_tokens {
            return bad(
                "knowledge.chunk_overlap_tokens",
                "must be less than chunk_tokens",
            );
        }
        if self.max_file_bytes == 0 || self.max_text_bytes == 0 {
            return bad("knowledge.max_file_bytes", "must be at least 1");
        }
        if !(1..=2048).contains(&self.embed_batch) {
            return bad("knowledge.embed_batch", "must be 1..=2048");
        }
        if !(1..=64).contains(&self.workers) {
            return bad("knowledge.workers", "must be 1..=64");
        }
        if !(-1.0..=1.0).contains(&self.min_similarity) {
            return bad("knowledge.min_similarity", "must be -1..=1");
        }
        if !(1..=3600).contains(&self.extract_timeout_secs) {
            return bad("knowledge.extract_timeout_secs", "must be 1..=3600");
        }
        if !(1..=3600).contains(&self.extract_cpu_secs) {
            return bad("knowledge.extract_cpu_secs", "must be 1..=3600");
        }
        if !(128..=65536).contains(&self.extract_memory_mb) {
            return bad("knowledge.extract_memory_mb", "must be 128..=65536");
        }
        if self.extractor.as_deref().is_some_and(str::is_empty) {
            return bad("knowledge.extractor", "must be a path, or unset");
        }
        if self.max_attempts < 1 {
            return bad("knowledge.max_attempts", "must be at least 1");
        }
        if !(1..=86_400).contains(&self.job_timeout_secs) {
            return bad("knowledge.job_timeout_secs", "must be 1..=86400");
        }
        if self.user_quota_bytes < 0 {
            return bad("knowledge.user_quota_bytes", "must be 0 (no limit) or more");
        }
        for m in models {
            if m.name.is_empty() || m.name.len() > 64 || m.name == DEMO_EMBEDDING_MODEL {
                return bad(
                    "embedding_models",
                    "each needs a name of 1-64 characters other than demo-embed",
                );
            }
            if !(1..=2000).contains(&m.dimensions) {
                return bad("embedding_models", "dimensions must be 1..=2000");
            }
            if !providers.contains(&m.provider.as_str()) {
                return Err(ConfigError::invalid(
                    "embedding_models",
                    format!(
                        "model {} names provider {}, which is not configured",
                        m.name, m.provider
                    ),
                ));
            }
        }
        let known = self.embedding_model == DEMO_EMBEDDING_MODEL
            || models.iter().any(|m| m.name == self.embedding_model);
        if !known {
            return Err(ConfigError::invalid(
                "knowledge.embedding_model",
                format!(
                    "{} is neither demo-embed nor one of [[embedding_models]]",
                    self.embedding_model
                ),
            ));
        }
        Ok(())
    }
}
