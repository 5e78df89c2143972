//! Why a turn's start was refused, in the turn's words: a conversation that is busy or
//! waits for an approval, or a budget reservation that fell short.

use uuid::Uuid;

use super::error::{BudgetShortfall, TurnError};
use crate::db::models::budget::Reserve;

/// A conversation that cannot take a message now: a reply is running, or one waits for
/// approval (a new message would land between a call and its result).
pub(super) async fn busy_error(
    conn: &mut diesel_async::AsyncPgConnection,
    conversation_id: Uuid,
) -> TurnError {
    let waiting = crate::turn::approval::sql::blocks_conversation(conn, conversation_id)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "checking for waiting approvals failed");
            false
        });
    if waiting {
        TurnError::ApprovalPending
    } else {
        TurnError::Busy
    }
}

/// A refused reservation: too little left, or held by other turns.
pub(crate) fn refusal_error(refusal: Reserve, model: &str) -> TurnError {
    use crate::db::models::budget_money::MoneyRefusal;
    match refusal {
        Reserve::Exhausted {
            resets_at,
            need,
            left,
            limit,
        } => TurnError::BudgetExhausted(BudgetShortfall {
            need,
            left,
            limit,
            resets_at,
        }),
        Reserve::Money(MoneyRefusal::Exhausted {
            resets_at,
            need,
            left,
            limit,
        }) => TurnError::MoneyExhausted(crate::turn::error::MoneyShortfall {
            need,
            left,
            limit: limit.amount,
            currency: limit.currency,
            resets_at,
        }),
        Reserve::Money(MoneyRefusal::Unpriced) => TurnError::ModelUnpriced {
            model: model.to_owned(),
            currency: String::from("your budget's currency"),
        },
        Reserve::Granted(_)
        | Reserve::HeldByOthers
        | Reserve::Money(MoneyRefusal::HeldByOthers) => TurnError::BudgetInUse,
    }
}
