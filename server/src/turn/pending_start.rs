//! The uncommitted start of a turn, held while the first model call opens (its COMMIT
//! travels alongside): committed before anything reaches the user, or closed unused.

use uuid::Uuid;

use crate::db;
use crate::db::pipelined::Committing;
use crate::turn::events::TurnEvent;

/// The uncommitted start of a turn and the connection it runs on. Dropped without a
/// successful commit, it closes that connection at once: Postgres then rolls the start back
/// and frees its row locks (the conversation, the budget period), where a connection parked in
/// the pool would hold them until the pool next looked at it.
pub struct PendingStart {
    committing: Option<Committing>,
    conn: Option<db::PooledConn>,
    /// The user message the start stores, announced once it is committed.
    message_id: Uuid,
}

impl PendingStart {
    pub fn new(conn: db::PooledConn, committing: Committing, message_id: Uuid) -> Self {
        Self {
            committing: Some(committing),
            conn: Some(conn),
            message_id,
        }
    }

    /// Commits the start (the connection goes back to the pool), then sends `turn_start`:
    /// the client never hears of a message id that is not stored.
    pub async fn commit(
        mut self,
        events: &crate::turn::turn_log::EventSink,
    ) -> diesel::QueryResult<()> {
        if let (Some(committing), Some(conn)) = (self.committing.take(), self.conn.as_mut()) {
            committing.wait(conn).await?;
            // Healthy again: back to the pool rather than closed by `drop`.
            drop(self.conn.take());
        }
        let message_id = self.message_id;
        let _ = events.send(TurnEvent::TurnStart { message_id }).await;
        Ok(())
    }
}

impl Drop for PendingStart {
    fn drop(&mut self) {
        // The statement futures go first: nothing may look at the connection while they live.
        drop(self.committing.take());
        if let Some(conn) = self.conn.take() {
            drop(deadpool::managed::Object::take(conn));
        }
    }
}
