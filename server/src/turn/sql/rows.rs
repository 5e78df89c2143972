//! The rows a tool step or a turn's end stores (its messages, their usage, the audit rows of
//! its tool calls) and its settlement, as parts of one statement
//! ([`crate::db::prepared::Joined`]): each kind of row is a part only when there are some.

use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};

use crate::db::models::audit::{self, NewAudit};
use crate::db::models::budget::{self, Guard, Hold, Spend};
use crate::db::models::message::{self, NewMessage};
use crate::db::models::usage::{self, NewUsage};
use crate::db::prepared::{joined, sql, Joined};

/// What a step or an end stores besides its own statement.
pub(super) struct Rows<'a> {
    pub messages: &'a [NewMessage],
    pub usage: &'a [NewUsage],
    pub audit: &'a [NewAudit],
}

impl Rows<'_> {
    /// `statement` storing these rows too.
    pub(super) fn within(&self, mut statement: Joined) -> Joined {
        if !self.messages.is_empty() {
            statement = statement.with("m", message::insert_rows(self.messages).part());
        }
        if !self.usage.is_empty() {
            statement = statement.with("u", usage::insert_rows(self.usage).part());
        }
        if !self.audit.is_empty() {
            statement = statement.with("a", audit::insert_rows(self.audit).part());
        }
        statement
    }

    /// These rows and the settlement of `settle` (a hold of tokens only; one with money
    /// settles on its own, [`budget::settle`]) in one statement, sent now (pipelinable).
    pub(super) fn store_settling(
        &self,
        conn: &mut AsyncPgConnection,
        settle: Option<&(Hold, Spend)>,
    ) -> BoxFuture<'static, diesel::QueryResult<()>> {
        let mut statement = joined(sql("SELECT 1 AS n").part());
        let mut money = None;
        if let Some((hold, spend)) = settle {
            statement = match budget::settle_within(statement, hold, *spend, Guard::None) {
                Ok(statement) => statement,
                Err(alone) => {
                    money = Some(budget::settle(conn, hold, *spend));
                    alone
                }
            };
        }
        let statement = self.within(statement);
        let stored = match statement.has_parts() {
            true => statement.execute(conn).map(|r| r.map(drop)).boxed(),
            false => futures_util::future::ready(Ok(())).boxed(),
        };
        match money {
            None => stored,
            Some(settled) => futures_util::future::try_join(settled, stored)
                .map(|r| r.map(drop))
                .boxed(),
        }
    }
}
