//! Transactions whose BEGIN and COMMIT travel with the statements around them.
//!
//! diesel-async's transaction manager sends BEGIN and COMMIT as round trips of their own, and it
//! cannot even start while a statement future of the connection is pending (it needs the
//! connection's transaction state to itself), so neither can share a round trip with a
//! statement. A turn's transactions are short and their statements are pipelined, so those two
//! extra round trips were a large share of a turn's time in the database. [`Pipelined`] sends
//! BEGIN, COMMIT and ROLLBACK as ordinary prepared statements instead, which pipeline like any
//! other.
//!
//! The price is that diesel-async no longer knows a transaction is open. A future dropped
//! half-way would hand the pool a connection inside our transaction, so while a [`Pipelined`]
//! is open the connection's transaction manager is marked as failed: dropped before
//! [`Pipelined::close`], the connection counts as broken and the pool discards it.
//!
//! Postgres keeps the pipeline safe: after a failed statement it refuses the rest of the
//! transaction, and a COMMIT of a failed transaction rolls it back. So a COMMIT sent with the
//! statements commits them all or none, and callers report the first statement error.

use std::future::Future;

use diesel::connection::TransactionManagerStatus;
use diesel::QueryResult;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, TransactionManager};
use futures_util::future::{BoxFuture, FutureExt};
use sync_wrapper::SyncWrapper;

use super::prepared::sql;

type Manager = <AsyncPgConnection as AsyncConnection>::TransactionManager;

/// A connection with a hand-rolled transaction in progress (or about to be).
pub struct Pipelined<'c> {
    conn: &'c mut AsyncPgConnection,
}

impl<'c> Pipelined<'c> {
    /// Takes the connection, marking it broken until [`Pipelined::close`]. It must not be in a
    /// transaction: pooled connections never are.
    pub fn open(conn: &'c mut AsyncPgConnection) -> Self {
        Manager::transaction_manager_status_mut(conn).set_in_error();
        Self { conn }
    }

    /// The connection, for building statement futures.
    pub fn conn(&mut self) -> &mut AsyncPgConnection {
        self.conn
    }

    /// Hands the connection back as healthy, once COMMIT or ROLLBACK has succeeded. No
    /// statement future of the connection may be pending (diesel-async would panic): every
    /// caller here has awaited them all.
    fn close(self) {
        *Manager::transaction_manager_status_mut(self.conn) = TransactionManagerStatus::default();
    }

    /// Sends BEGIN and then `work` (statement futures built from [`Pipelined::conn`]) in one
    /// round trip. On an error the transaction is open and failed: [`Pipelined::abort`] it.
    pub async fn begin_with<T>(
        &mut self,
        work: impl Future<Output = QueryResult<T>>,
    ) -> QueryResult<T> {
        let begin = self.control("BEGIN");
        // `join!` polls in order, so BEGIN is sent first.
        let (begun, done) = futures_util::join!(begin, work);
        begun.and(done)
    }

    /// Sends `work` and then COMMIT in one round trip, and closes. Postgres rolls back instead
    /// if a statement of the transaction failed; the first error is returned.
    pub async fn commit_with<T>(
        mut self,
        work: impl Future<Output = QueryResult<T>>,
    ) -> QueryResult<T> {
        let commit = self.control("COMMIT");
        let (done, committed) = futures_util::join!(work, commit);
        let committed = committed.map(|()| self.close());
        done.and_then(|v| committed.map(|()| v))
    }

    /// BEGIN, `work` and COMMIT in one round trip: for a transaction that decides nothing
    /// between its statements.
    pub async fn run<T>(mut self, work: impl Future<Output = QueryResult<T>>) -> QueryResult<T> {
        let begin = self.control("BEGIN");
        let commit = self.control("COMMIT");
        let (begun, done, committed) = futures_util::join!(begin, work, commit);
        let committed = committed.map(|()| self.close());
        begun.and(done).and_then(|v| committed.map(|()| v))
    }

    /// Sends nothing yet: returns `work` and COMMIT as one [`Committing`], which the caller
    /// awaits alongside work of its own (a turn opens its model call meanwhile). The
    /// connection stays marked broken until [`Committing::wait`] has seen the COMMIT succeed.
    pub fn commit_later(mut self, work: BoxFuture<'static, QueryResult<()>>) -> Committing {
        let commit = self.control("COMMIT");
        Committing {
            commit: SyncWrapper::new(futures_util::future::join(work, commit).boxed()),
        }
    }

    /// Commits (or rolls back a failed transaction) and closes.
    pub async fn commit(mut self) -> QueryResult<()> {
        self.control("COMMIT").await?;
        self.close();
        Ok(())
    }

    /// Rolls back and closes; the connection stays marked broken if the rollback fails.
    pub async fn abort(mut self) -> QueryResult<()> {
        self.control("ROLLBACK").await?;
        self.close();
        Ok(())
    }

    fn control(&mut self, statement: &'static str) -> BoxFuture<'static, QueryResult<()>> {
        sql(statement)
            .execute(self.conn)
            .map(|r| r.map(drop))
            .boxed()
    }
}

/// Statements and a COMMIT not yet sent; see [`Pipelined::commit_later`].
#[must_use = "the transaction commits only when waited for"]
pub struct Committing {
    /// Only ever awaited by value, so it may sit in a struct that is shared by reference.
    commit: SyncWrapper<BoxFuture<'static, (QueryResult<()>, QueryResult<()>)>>,
}

impl Committing {
    /// Sends the statements and COMMIT, waits for them, and hands `conn` (the connection the
    /// transaction ran on) back as healthy once the COMMIT succeeded. An error means the
    /// transaction did not commit, or, if the connection failed, that nobody knows.
    pub async fn wait(self, conn: &mut AsyncPgConnection) -> QueryResult<()> {
        let (done, committed) = self.commit.into_inner().await;
        committed?;
        Pipelined { conn }.close();
        done
    }
}
