//! The end of a title call on the database side: the title, the call's settlement and its
//! usage row, in one transaction of one round trip.

use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel::QueryResult;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::FutureExt;
use uuid::Uuid;

use crate::db::models::budget::{self, Hold, Spend};
use crate::db::models::usage::{self, NewUsage};
use crate::db::pipelined::Pipelined;
use crate::db::prepared::sql;

/// Stores `title` as the conversation's generated title (unless the user named it
/// meanwhile), settles the call's `hold` at `spend` and records `usage_rows`.
///
/// In the lock order ([`crate::turn::sql`]): the conversation row first, then the budget.
/// Settling first and titling after held the user's budget row while waiting for the
/// conversation, which a turn starting or ending in it holds while it waits for that budget
/// row: the deadlock of issue 43.
pub async fn store(
    conn: &mut AsyncPgConnection,
    conversation_id: Uuid,
    title: Option<&str>,
    hold: &Hold,
    spend: Spend,
    usage_rows: &[NewUsage],
) -> QueryResult<()> {
    let mut tx = Pipelined::open(conn);
    let c = tx.conn();
    // Sent in this order: conversation, then the budget rows, then the new usage row.
    let conversation = match title {
        Some(t) => sql("UPDATE conversations SET title = $2, title_auto = false \
                        WHERE id = $1 AND title_auto")
        .bind::<SqlUuid, _>(conversation_id)
        .bind::<Text, _>(t.to_owned())
        .execute(c)
        .map(|r| r.map(drop))
        .boxed(),
        // Without a title the transaction locks only the budget: the usage row's key share
        // on the conversation does not wait for a turn's update of it.
        None => super::ready_ok(),
    };
    let settled = budget::settle(c, hold, spend);
    let recorded = usage::insert_many(c, usage_rows);
    tx.run(futures_util::future::try_join3(
        conversation,
        settled,
        recorded,
    ))
    .await
    .map(drop)
}
