//! How storing a finished turn can fail: a failure that may pass by retrying (the
//! connection, a serialization failure, a deadlock) and one that would only repeat (a
//! constraint, an overflow), which ends the turn at once ([`crate::turn::store`]).

use crate::turn::events::TurnEvent;

/// What became of a finished turn's final commit.
pub(super) enum Persisted {
    /// Stored whole.
    Stored,
    /// Stored as incomplete after a failure retrying could not mend; the turn ends with
    /// this event instead of its own.
    Salvaged(TurnEvent),
    /// Nothing stored (the database stayed away, or the turn was ended elsewhere).
    Lost,
}

/// Why one attempt at storing failed.
pub(super) enum Failure {
    /// Worth another attempt: the connection, a serialization failure or a deadlock.
    Passing(anyhow::Error),
    /// Would fail the same way again.
    Lasting(diesel::result::Error),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Passing(e) => write!(f, "{e}"),
            Self::Lasting(e) => write!(f, "{e}"),
        }
    }
}

impl Failure {
    pub(super) fn of(e: diesel::result::Error) -> Self {
        if is_passing(&e) {
            Self::Passing(e.into())
        } else {
            Self::Lasting(e)
        }
    }
}

/// Whether a database error may pass by retrying: the connection went or timed out, or
/// Postgres gave the transaction up to another (serialization failure, deadlock).
pub(super) fn is_passing(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    if crate::db::conflict::is_conflict(e) {
        return true;
    }
    match e {
        Error::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        )
        | Error::BrokenTransactionManager => true,
        Error::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            let m = info.message().to_ascii_lowercase();
            [
                "statement timeout",
                "connection",
                "terminating",
                "shutting down",
            ]
            .iter()
            .any(|w| m.contains(w))
        }
        _ => false,
    }
}

/// The turn's answer could not be stored whole (an error no retry mends).
pub(super) fn store_failed() -> TurnEvent {
    TurnEvent::Error(Box::new(crate::turn::events::ErrorEvent {
        code: "store_failed".into(),
        message: "the reply could not be saved in full; what was written is kept, marked \
                  incomplete"
            .into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::result::{DatabaseErrorKind, Error};

    fn db(kind: DatabaseErrorKind, message: &'static str) -> Error {
        crate::db::database_error(kind, message)
    }

    #[test]
    fn only_failures_that_pass_are_retried() {
        use DatabaseErrorKind as K;
        for passing in [
            db(K::SerializationFailure, "could not serialize access"),
            db(K::ClosedConnection, "closed"),
            db(K::Unknown, "deadlock detected"),
            db(
                K::Unknown,
                "terminating connection due to administrator command",
            ),
            Error::BrokenTransactionManager,
        ] {
            assert!(is_passing(&passing), "{passing}");
        }
        for lasting in [
            db(K::Unknown, "numeric field overflow"),
            db(K::CheckViolation, "violates check constraint"),
            db(K::NotNullViolation, "null value"),
            Error::NotFound,
        ] {
            assert!(!is_passing(&lasting), "{lasting}");
        }
    }
}
