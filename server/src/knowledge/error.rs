//! Every way a knowledge request can be refused; `crate::error` maps them to HTTP.

/// Why a collection request or a job step did not happen.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    /// The database cannot hold collections (no pgvector), or they are turned off.
    #[error("{0}")]
    Unavailable(String),
    #[error("no such collection")]
    CollectionNotFound,
    #[error("no such conversation")]
    ConversationNotFound,
    #[error("no such file in this collection")]
    FileNotFound,
    /// The caller may read but not change it.
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("you already have a collection named {0}")]
    CollectionExists(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the file is {bytes} bytes; a collection file may have at most {max}")]
    FileTooLarge { bytes: usize, max: usize },
    #[error("{0}")]
    Unsupported(String),
    #[error("the file is empty")]
    EmptyFile,
    #[error("{0}")]
    Limit(String),
    /// The caller's budget cannot pay for embedding the query (`budget_exhausted`, or
    /// `budget_in_use` while running turns hold it).
    #[error("{message}")]
    Budget {
        code: &'static str,
        message: String,
        retry_after: u64,
    },

    /// The caller's collection files would take more than their quota.
    #[error(
        "your collection files take {used} of your {limit} bytes; this file ({bytes} bytes) \
         does not fit. Remove files to make room."
    )]
    Quota { used: i64, bytes: i64, limit: i64 },
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
    #[error("the database is unavailable: {0}")]
    Pool(String),
}

impl From<crate::db::PoolError> for KnowledgeError {
    fn from(e: crate::db::PoolError) -> Self {
        KnowledgeError::Pool(e.to_string())
    }
}
