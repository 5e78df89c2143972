//! Paying for embeddings: a hold on the user's budget before the provider is called, then
//! the charge (what the provider counted, at most the hold) and a usage row. Ingestion
//! batches ([`super::embed_step`]) and search queries ([`embed_query`]) pay the same way, so
//! a spent budget stops both and the usage report shows both.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use uuid::Uuid;

use super::{Knowledge, KnowledgeError};
use crate::db::models::budget::{self, Hold, Reserve, ReserveAsk, Spend};
use crate::db::models::budget_money::MoneyRefusal;
use crate::db::models::usage::{self, NewUsage};
use crate::domain::pricing::TokenCounts;

/// How long a hold lives if this process dies before settling it.
const HOLD_TTL: Duration = Duration::from_secs(300);

/// Why the budget cannot pay for an embedding call now.
#[derive(Debug)]
pub(super) enum Refused {
    /// Less is left this period than the call needs (maybe nothing).
    Exhausted {
        left: i64,
        need: i64,
        resets_at: Option<DateTime<Utc>>,
    },
    /// Enough is left, but running turns hold it.
    HeldByOthers,
    /// The money budget refused.
    Money(MoneyRefusal),
}

impl Refused {
    /// The refusal as a search answers it (429 `budget_exhausted` / `budget_in_use`).
    fn into_search_error(self) -> KnowledgeError {
        let retry = |at: Option<DateTime<Utc>>| {
            at.map(|t| (t - Utc::now()).num_seconds().max(1))
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(3600)
        };
        match self {
            Refused::Exhausted {
                left, resets_at, ..
            } => KnowledgeError::Budget {
                code: "budget_exhausted",
                message: format!(
                    "your token budget has {} tokens left, too few to embed the search query; {}",
                    left.max(0),
                    resets_at.map_or("ask an admin to raise it".to_owned(), |t| format!(
                        "it resets at {}",
                        t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ))
                ),
                retry_after: retry(resets_at),
            },
            Refused::HeldByOthers | Refused::Money(MoneyRefusal::HeldByOthers) => {
                KnowledgeError::Budget {
                    code: "budget_in_use",
                    message: "replies in progress (this one included) hold the rest of your \
                              budget, so the search query cannot be embedded now"
                        .into(),
                    retry_after: 2,
                }
            }
            Refused::Money(MoneyRefusal::Exhausted { resets_at, .. }) => KnowledgeError::Budget {
                code: "budget_exhausted",
                message: "your money budget is used up; the search query cannot be embedded".into(),
                retry_after: retry(resets_at),
            },
            Refused::Money(MoneyRefusal::Unpriced) => KnowledgeError::Budget {
                code: "budget_exhausted",
                message: "the embedding model has no price, so your money budget cannot pay \
                          for a search"
                    .into(),
                retry_after: 3600,
            },
        }
    }
}

/// Holds about `estimate` tokens of `user`'s budget for an embedding call.
pub(super) async fn hold(
    conn: &mut AsyncPgConnection,
    k: &Knowledge,
    user: Uuid,
    estimate: i64,
) -> diesel::QueryResult<Result<Hold, Refused>> {
    let estimate = estimate.max(1);
    let limit = budget::limit_for(conn, user).await?;
    let ask = ReserveAsk {
        user_id: user,
        limit,
        input: estimate,
        price: k.model.price.clone(),
        want: estimate,
        need: estimate,
        now: (k.clock)(),
        hold_ttl: HOLD_TTL,
        process_id: k.process_id,
        turn: None,
    };
    Ok(match budget::reserve(conn, &ask).await? {
        Reserve::Granted(hold) => Ok(hold),
        Reserve::Exhausted {
            left,
            need,
            resets_at,
            ..
        } => Err(Refused::Exhausted {
            left,
            need,
            resets_at,
        }),
        Reserve::HeldByOthers => Err(Refused::HeldByOthers),
        Reserve::Money(refusal) => Err(Refused::Money(refusal)),
    })
}

/// What `tokens` counted by the provider cost `user` under `hold`: the spend that settles
/// it, and the usage row that records it.
pub(super) fn charge(k: &Knowledge, user: Uuid, hold: &Hold, tokens: u64) -> (Spend, NewUsage) {
    let counted = i64::try_from(tokens).unwrap_or(i64::MAX);
    let charged = if hold.is_limited() {
        counted.min(hold.amount)
    } else {
        counted
    };
    let cost = k.model.price.as_ref().map(|p| {
        let c = p.cost(&TokenCounts {
            input: tokens,
            ..Default::default()
        });
        (c, p.currency.clone())
    });
    let spend = Spend {
        tokens: charged,
        cost: cost.as_ref().map_or(rust_decimal::Decimal::ZERO, |c| c.0),
    };
    let row = NewUsage {
        user_id: user,
        conversation_id: None,
        message_id: None,
        model: k.model.name.clone(),
        fallback_from: None,
        fallback_reason: None,
        input_tokens: counted,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        charged,
        cost,
    };
    (spend, row)
}

/// Lets a hold go unspent (best effort: one left behind expires by itself).
pub(super) async fn release(k: &Knowledge, hold: &Hold) {
    if let Ok(mut conn) = k.pool.get().await {
        let _ = budget::settle(&mut conn, hold, Spend::default()).await;
    }
}

/// Embeds a search query for `user`, paid from their budget like an ingestion batch: a
/// spent budget refuses it before the provider is called.
pub(super) async fn embed_query(
    k: &Knowledge,
    user: Uuid,
    query: &str,
) -> Result<Vec<f32>, KnowledgeError> {
    let estimate = i64::try_from(crate::llm::estimate_tokens(query)).unwrap_or(i64::MAX);
    let hold = {
        // Not held while the embedder answers.
        let mut conn = k.pool.get().await?;
        hold(&mut conn, k, user, estimate)
            .await?
            .map_err(Refused::into_search_error)?
    };
    let embedded = match k.model.embed(&[query.to_owned()]).await {
        Ok(e) => e,
        Err(e) => {
            release(k, &hold).await;
            return Err(KnowledgeError::Unavailable(format!(
                "the query could not be embedded: {e}"
            )));
        }
    };
    let (spend, row) = charge(k, user, &hold, embedded.tokens);
    let mut conn = k.pool.get().await?;
    conn.transaction::<(), diesel::result::Error, _>(|conn| {
        let (hold, row) = (&hold, &row);
        async move {
            budget::settle(conn, hold, spend).await?;
            usage::insert_many(conn, std::slice::from_ref(row)).await?;
            Ok(())
        }
        .scope_boxed()
    })
    .await?;
    k.metrics.knowledge_embedding_tokens.inc_by(embedded.tokens);
    Ok(embedded.vectors.into_iter().next().unwrap_or_default())
}
