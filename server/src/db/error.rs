//! What can go wrong talking to Postgres, in the database's own words: the HTTP boundary
//! decides what a client is told ([`crate::error`]).

use super::PoolError;

/// A failed database operation.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Postgres cannot be reached right now (connection lost, pool exhausted or broken):
    /// worth retrying shortly.
    #[error("database unavailable: {0}")]
    Unavailable(anyhow::Error),
    /// Too much work is queued for the database (turn starts): retry after a moment.
    #[error("{message}")]
    Overloaded {
        message: &'static str,
        retry_after_secs: u64,
    },
    /// A statement ran past `database.statement_timeout_ms` and Postgres cancelled it.
    #[error("statement timed out: {0}")]
    TimedOut(diesel::result::Error),
    /// A statement failed for another reason: a bug or an unexpected state.
    #[error("database error: {0}")]
    Query(diesel::result::Error),
}

impl From<diesel::result::Error> for DbError {
    fn from(e: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error};
        match &e {
            Error::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
            | Error::DatabaseError(DatabaseErrorKind::UnableToSendCommand, _)
            | Error::BrokenTransactionManager => Self::Unavailable(e.into()),
            Error::DatabaseError(DatabaseErrorKind::Unknown, info)
                if is_connection_failure(info.message()) =>
            {
                Self::Unavailable(e.into())
            }
            Error::DatabaseError(DatabaseErrorKind::Unknown, info)
                if info.message().contains("statement timeout") =>
            {
                Self::TimedOut(e)
            }
            _ => Self::Query(e),
        }
    }
}

impl From<PoolError> for DbError {
    fn from(e: PoolError) -> Self {
        Self::Unavailable(anyhow::anyhow!("database pool: {e}"))
    }
}

/// Postgres's words for a connection that went away (diesel reports them as `Unknown`).
fn is_connection_failure(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("connection") || m.contains("terminating") || m.contains("shutting down")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_unavailable_other_failures_are_not() {
        use diesel::result::Error;
        assert!(matches!(
            DbError::from(Error::BrokenTransactionManager),
            DbError::Unavailable(_)
        ));
        assert!(matches!(DbError::from(Error::NotFound), DbError::Query(_)));
    }
}
