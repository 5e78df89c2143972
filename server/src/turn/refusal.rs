//! Why a turn's start was refused, in the turn's words: a conversation that is busy or
//! waits for an approval, or a budget reservation that fell short.

use uuid::Uuid;

use super::error::{BudgetShortfall, TurnError};
use crate::db::models::budget::Reserve;
use crate::domain::{ApprovalState, Approver};

/// A conversation that cannot take a message now: a reply is running, or one waits for
/// approval (a new message would land between a call and its result). The refusal says who
/// must decide: the user can decide their own calls, only an admin an admin's.
pub(super) async fn busy_error(
    conn: &mut diesel_async::AsyncPgConnection,
    conversation_id: Uuid,
) -> TurnError {
    let calls = crate::turn::approval::sql::blocking_calls(conn, conversation_id)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "checking for waiting approvals failed");
            Vec::new()
        });
    waiting_error(&calls)
}

/// The refusal for a conversation whose steps hold `calls`: pending ones wait for someone
/// (the user when any is theirs to decide); decided ones whose turn has not gone on yet are
/// a reply about to be generated.
fn waiting_error(calls: &[(Approver, ApprovalState)]) -> TurnError {
    let pending = |who: Approver| {
        calls
            .iter()
            .any(|(a, s)| *a == who && *s == ApprovalState::Pending)
    };
    if pending(Approver::User) {
        TurnError::ApprovalPending { admin: false }
    } else if pending(Approver::Admin) {
        TurnError::ApprovalPending { admin: true }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_who_must_decide() {
        use ApprovalState::{Approved, Pending};
        use Approver::{Admin, User};
        let admin_only = waiting_error(&[(Admin, Pending), (User, Approved)]);
        assert!(matches!(
            admin_only,
            TurnError::ApprovalPending { admin: true }
        ));
        let mine = waiting_error(&[(Admin, Pending), (User, Pending)]);
        assert!(matches!(mine, TurnError::ApprovalPending { admin: false }));
        assert!(matches!(
            waiting_error(&[(Admin, Approved)]),
            TurnError::Busy
        ));
        assert!(matches!(waiting_error(&[]), TurnError::Busy));
    }
}
