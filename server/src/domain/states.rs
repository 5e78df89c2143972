//! The states a message, a turn and an approval can be in, and who decides what. Each is an
//! enum spelled as today's snake_case string in JSON and in its `TEXT` column, so neither the
//! wire nor the database changed when the string literals went.

use std::fmt;
use std::str::FromStr;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use serde::{Deserialize, Serialize};

/// The built-in role with every power.
pub const ADMIN_ROLE: &str = "admin";
/// The role a self-registered account gets.
pub const MEMBER_ROLE: &str = "member";

/// A string that names none of an enum's states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind}: {value:?}")]
pub struct UnknownState {
    pub kind: &'static str,
    pub value: String,
}

/// An enum stored and sent as one of a fixed set of strings.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $kind:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, AsExpression, FromSqlRow, utoipa::ToSchema)]
        #[diesel(sql_type = Text)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The string the wire and the database use.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownState;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownState { kind: $kind, value: s.to_owned() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl ToSql<Text, Pg> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
                <str as ToSql<Text, Pg>>::to_sql(self.as_str(), out)
            }
        }

        impl FromSql<Text, Pg> for $name {
            fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
                let s = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
                Ok(s.parse()?)
            }
        }
    };
}

text_enum!(
    /// Who wrote a message.
    MessageRole, "message role" {
        User = "user",
        Assistant = "assistant",
        Tool = "tool",
    }
);

text_enum!(
    /// Whether a message is whole (`incomplete` carries a reason beside it).
    MessageStatus, "message status" {
        Complete = "complete",
        Incomplete = "incomplete",
    }
);

text_enum!(
    /// What a turn that has not ended is doing (`active_turn.status`).
    TurnState, "turn state" {
        /// Running on some process.
        Running = "running",
        /// Paused until its tool calls are decided.
        AwaitingApproval = "awaiting_approval",
    }
);

text_enum!(
    /// Where a paused call stands.
    ApprovalState, "approval state" {
        Pending = "pending",
        Approved = "approved",
        Denied = "denied",
        /// Nobody decided within the approval TTL: it did not run.
        Expired = "expired",
    }
);

text_enum!(
    /// A person's decision on a paused call.
    Decision, "decision" {
        Approve = "approve",
        Deny = "deny",
    }
);

text_enum!(
    /// Who confirms a call of a tool before it runs.
    Approver, "approver" {
        /// Runs without asking.
        None = "none",
        /// The person chatting confirms.
        User = "user",
        /// An admin confirms.
        Admin = "admin",
    }
);

impl Decision {
    /// The state a decision leaves its approval in.
    pub const fn state(self) -> ApprovalState {
        match self {
            Self::Approve => ApprovalState::Approved,
            Self::Deny => ApprovalState::Denied,
        }
    }
}

impl ApprovalState {
    /// Whether the call may run (approved), as opposed to waiting or refused.
    pub const fn runs(self) -> bool {
        matches!(self, Self::Approved)
    }
}

impl Approver {
    /// The approver an API value names (`None` when it names none).
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_through_its_string_and_json() {
        fn check<T>(all: &[T])
        where
            T: Copy + fmt::Debug + PartialEq + FromStr + fmt::Display + Serialize,
            <T as FromStr>::Err: fmt::Debug,
        {
            for s in all {
                let text = s.to_string();
                assert_eq!(text.parse::<T>().ok(), Some(*s), "{text}");
                assert_eq!(serde_json::to_value(s).ok(), Some(serde_json::json!(text)));
            }
        }
        check(MessageRole::ALL);
        check(MessageStatus::ALL);
        check(TurnState::ALL);
        check(ApprovalState::ALL);
        check(Decision::ALL);
        check(Approver::ALL);
        assert!("Pending".parse::<ApprovalState>().is_err());
        assert_eq!(Decision::Deny.state(), ApprovalState::Denied);
    }
}
