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
    /// Postgres gave this transaction up to a concurrent one (a deadlock or a serialization
    /// failure): nothing was written, and the same request a moment later succeeds.
    #[error("transaction conflict: {0}")]
    Conflict(diesel::result::Error),
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
            _ if super::conflict::is_conflict(&e) => Self::Conflict(e),
            _ => Self::Query(e),
        }
    }
}

impl From<PoolError> for DbError {
    fn from(e: PoolError) -> Self {
        Self::Unavailable(anyhow::anyhow!("database pool: {e}"))
    }
}

/// Why connecting to Postgres failed, in a word an operator acts on, read from the whole
/// error chain (`{e:#}`): the server is not listening, the name does not resolve, the login
/// is refused, the database is missing, or the connection timed out.
pub fn connect_cause(chain: &str) -> &'static str {
    let m = chain.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if has(&["connection refused", "os error 111"]) {
        "refused: nothing listens at that host and port (is Postgres running?)"
    } else if has(&[
        "failed to lookup address",
        "name or service not known",
        "nodename nor servname",
        "no such host",
        "temporary failure in name resolution",
        "dns",
    ]) {
        "DNS: the host name does not resolve"
    } else if has(&[
        "password authentication failed",
        "authentication",
        "no password supplied",
        "role \"",
        "no pg_hba.conf entry",
    ]) {
        "auth: Postgres refused the login (user, password or pg_hba.conf)"
    } else if m.contains("database \"") && m.contains("does not exist") {
        "the database does not exist (set database.create_if_missing or create it)"
    } else if has(&["timed out", "timeout"]) {
        "timeout: the host did not answer"
    } else if has(&["the database system is starting up", "shutting down"]) {
        "starting: Postgres is not ready yet"
    } else {
        "other"
    }
}

/// Postgres's words for a connection that went away (diesel reports them as `Unknown`).
fn is_connection_failure(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("connection") || m.contains("terminating") || m.contains("shutting down")
}

/// A diesel error as Postgres would report it (`kind`, `message`), for the tests of how
/// failures are classified, here and in the rooms that retry them.
#[cfg(test)]
pub fn database_error(
    kind: diesel::result::DatabaseErrorKind,
    message: &'static str,
) -> diesel::result::Error {
    struct Info(&'static str);
    impl diesel::result::DatabaseErrorInformation for Info {
        fn message(&self) -> &str {
            self.0
        }
        fn details(&self) -> Option<&str> {
            None
        }
        fn hint(&self) -> Option<&str> {
            None
        }
        fn table_name(&self) -> Option<&str> {
            None
        }
        fn column_name(&self) -> Option<&str> {
            None
        }
        fn constraint_name(&self) -> Option<&str> {
            None
        }
        fn statement_position(&self) -> Option<i32> {
            None
        }
    }
    diesel::result::Error::DatabaseError(kind, Box::new(Info(message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_connection_names_its_cause() {
        let cases = [
            ("connecting to run migrations: error connecting to server: Connection refused (os error 111)", "refused"),
            ("error connecting to server: failed to lookup address information: Name or service not known", "DNS"),
            ("connecting: password authentication failed for user \"bob\"", "auth"),
            ("FATAL: role \"nobody\" does not exist", "auth"),
            ("FATAL: database \"x\" does not exist", "the database does not exist"),
            ("error connecting to server: timed out", "timeout"),
            ("something else", "other"),
        ];
        for (chain, cause) in cases {
            assert!(
                connect_cause(chain).starts_with(cause),
                "{chain}: {}",
                connect_cause(chain)
            );
        }
    }

    #[test]
    fn lost_connections_are_unavailable_other_failures_are_not() {
        use diesel::result::Error;
        assert!(matches!(
            DbError::from(Error::BrokenTransactionManager),
            DbError::Unavailable(_)
        ));
        assert!(matches!(DbError::from(Error::NotFound), DbError::Query(_)));
    }

    #[test]
    fn deadlocks_and_serialization_failures_are_conflicts_not_bugs() {
        use diesel::result::DatabaseErrorKind as K;
        let db = super::database_error;
        assert!(matches!(
            DbError::from(db(K::Unknown, "deadlock detected")),
            DbError::Conflict(_)
        ));
        assert!(matches!(
            DbError::from(db(K::SerializationFailure, "could not serialize access")),
            DbError::Conflict(_)
        ));
        assert!(matches!(
            DbError::from(db(K::UniqueViolation, "duplicate key")),
            DbError::Query(_)
        ));
    }
}
