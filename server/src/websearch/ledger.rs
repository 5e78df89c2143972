//! What a query leaves behind: its audit row (`web_search_queries`: the query as sent, the
//! provider, the result URLs, the cost), the results the model saw (`web_search_results`,
//! whose ids are the `[W…]` refs), the per-user daily count, and the money it cost, held
//! before the provider is called and settled after, like a model call's (0 overshoot).

use std::time::Duration;

use diesel::sql_types::{Array, BigInt, Nullable, Numeric, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::provider::Hit;
use crate::db::models::budget::{self, ReserveAsk};
use crate::db::models::budget_money::{self, MoneyHold, MoneyRefusal};
use crate::domain::pricing::Price;

/// How long a query's money hold lives if this process dies before settling it.
const HOLD_TTL: Duration = Duration::from_secs(300);

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The audit row of a query about to be sent.
pub struct Sent<'a> {
    pub user: Uuid,
    pub conversation: Uuid,
    pub provider: &'a str,
    pub query: &'a str,
    pub stripped: bool,
    pub currency: &'a str,
}

/// Opens the audit row of a query (`pending`) unless `user` has sent `per_day` queries in
/// the last 24 hours (failed ones do not count). One at a time per user, so two parallel
/// calls cannot both take the last one. `Ok(None)`: the daily limit is reached.
pub async fn open(
    conn: &mut AsyncPgConnection,
    sent: &Sent<'_>,
    per_day: i64,
) -> diesel::QueryResult<Option<i64>> {
    conn.transaction(|conn| {
        async move {
            diesel::sql_query(
                "SELECT pg_advisory_xact_lock(hashtextextended('web_search:' || $1::text, 0))",
            )
            .bind::<SqlUuid, _>(sent.user)
            .execute(conn)
            .await?;
            let used: Count = diesel::sql_query(
                "SELECT count(*) AS n FROM web_search_queries \
                  WHERE user_id = $1 AND created_at > now() - interval '1 day' \
                    AND outcome NOT IN ('error', 'refused')",
            )
            .bind::<SqlUuid, _>(sent.user)
            .get_result(conn)
            .await?;
            if used.n >= per_day {
                return Ok(None);
            }
            let row: Id = diesel::sql_query(
                "INSERT INTO web_search_queries (user_id, conversation_id, provider, query_sent, \
                                                 stripped, outcome, currency) \
                 VALUES ($1, $2, $3, $4, $5, 'pending', $6) RETURNING id",
            )
            .bind::<SqlUuid, _>(sent.user)
            .bind::<SqlUuid, _>(sent.conversation)
            .bind::<Text, _>(sent.provider)
            .bind::<Text, _>(sent.query)
            .bind::<diesel::sql_types::Bool, _>(sent.stripped)
            .bind::<Text, _>(sent.currency)
            .get_result(conn)
            .await?;
            Ok(Some(row.id))
        }
        .scope_boxed()
    })
    .await
}

/// Closes a query's row with its results and cost, and stores the results; their ids, in
/// order (the refs the model cites).
pub async fn succeeded(
    conn: &mut AsyncPgConnection,
    query_id: i64,
    user: Uuid,
    provider: &str,
    hits: &[Hit],
    cost: Decimal,
) -> diesel::QueryResult<Vec<i64>> {
    let urls: Vec<String> = hits.iter().map(|h| h.url.clone()).collect();
    let titles: Vec<String> = hits.iter().map(|h| h.title.clone()).collect();
    let snippets: Vec<String> = hits.iter().map(|h| h.snippet.clone()).collect();
    let published: Vec<Option<String>> = hits.iter().map(|h| h.published.clone()).collect();
    conn.transaction(|conn| {
        async move {
            diesel::sql_query(
                "UPDATE web_search_queries SET outcome = 'ok', result_urls = $2, cost = $3 \
                  WHERE id = $1",
            )
            .bind::<BigInt, _>(query_id)
            .bind::<Array<Text>, _>(&urls)
            .bind::<Numeric, _>(cost)
            .execute(conn)
            .await?;
            let ids: Vec<Id> = diesel::sql_query(
                "INSERT INTO web_search_results (query_id, user_id, url, title, snippet, \
                                                 published, provider) \
                 SELECT $1, $2, u, t, s, p, $3 \
                   FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) \
                        WITH ORDINALITY AS x(u, t, s, p, i) \
                  ORDER BY i RETURNING id",
            )
            .bind::<BigInt, _>(query_id)
            .bind::<SqlUuid, _>(user)
            .bind::<Text, _>(provider)
            .bind::<Array<Text>, _>(&urls)
            .bind::<Array<Text>, _>(&titles)
            .bind::<Array<Text>, _>(&snippets)
            .bind::<Array<Nullable<Text>>, _>(&published)
            .load(conn)
            .await?;
            let mut ids: Vec<i64> = ids.into_iter().map(|r| r.id).collect();
            // Serial ids rise in insertion order.
            ids.sort_unstable();
            Ok(ids)
        }
        .scope_boxed()
    })
    .await
}

/// Closes a query's row: `error` (the provider failed) or `refused` (never sent: the budget
/// could not pay), with what the model read.
pub async fn failed(
    conn: &mut AsyncPgConnection,
    query_id: i64,
    outcome: &str,
    message: &str,
) -> diesel::QueryResult<()> {
    diesel::sql_query("UPDATE web_search_queries SET outcome = $3, error = $2 WHERE id = $1")
        .bind::<BigInt, _>(query_id)
        .bind::<Text, _>(crate::tools::truncate_chars(message, 500))
        .bind::<Text, _>(outcome)
        .execute(conn)
        .await
        .map(drop)
}

/// Holds `price` of `user`'s money budget for one query. `Ok(Ok(None))`: nothing to hold
/// (free, or no money budget); `Ok(Err(why))`: the budget cannot pay, in words.
pub async fn hold(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    price: Decimal,
    currency: &str,
    now: chrono::DateTime<chrono::Utc>,
    process_id: Uuid,
) -> diesel::QueryResult<Result<Option<MoneyHold>, String>> {
    if price <= Decimal::ZERO {
        return Ok(Ok(None));
    }
    let limit = budget::limit_for(conn, user).await?;
    if limit.money.is_none() {
        return Ok(Ok(None));
    }
    // A query is priced as one "token" at the query's price per million: the money ledger's
    // worst case of one token in is then exactly the price.
    let per_million = price * Decimal::from(1_000_000u32);
    let ask = ReserveAsk {
        user_id: user,
        limit,
        input: 1,
        price: Some(Price {
            currency: currency.to_owned(),
            input: per_million,
            output: Decimal::ZERO,
            cache_read: Decimal::ZERO,
            cache_write: Decimal::ZERO,
        }),
        want: 1,
        need: 1,
        now,
        hold_ttl: HOLD_TTL,
        process_id,
        turn: None,
    };
    let first = budget_money::try_reserve(conn, &ask).await?;
    Ok(match budget_money::reserve_after(conn, &ask, first).await? {
        Ok(hold) => Ok(hold),
        Err(MoneyRefusal::Exhausted { left, limit, .. }) => Err(format!(
            "your money budget cannot pay for a web search: a query costs {price} {currency} \
             and {left} {} is left this period",
            limit.currency
        )),
        Err(MoneyRefusal::HeldByOthers) => Err(
            "replies in progress hold the rest of your money budget; try the search again shortly"
                .into(),
        ),
        Err(MoneyRefusal::Unpriced) => Err(format!(
            "this search provider is priced in {currency}, which is not your money budget's \
             currency, so your budget cannot pay for it"
        )),
    })
}

/// Charges `cost` (at most the hold) and releases the hold.
pub async fn settle(
    conn: &mut AsyncPgConnection,
    hold: &MoneyHold,
    cost: Decimal,
) -> diesel::QueryResult<()> {
    budget_money::settle(conn, hold, cost).await
}
