//! The start of a turn: one transaction that checks the account, claims (or creates) the
//! conversation, reads its history and the tools, reserves budget for the first model call
//! and stores the user message.

use diesel::result::Error::NotFound;
use diesel::QueryResult;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, FutureExt};

use crate::db::models::api_key::KeyState;
use crate::db::models::budget::{self, Hold, HoldTurn, Reserve, ReserveAsk};
use crate::db::models::budget_early::{self, Locked};
use crate::db::models::conversation::Conversation;
use crate::db::models::custom_tool::CustomToolRow;
use crate::db::models::message::{self, NewMessage};
use crate::db::models::message_recent::{self, After, Recent};
use crate::db::models::user::{AuthState, Rejection};
use crate::db::pipelined::Pipelined;
use crate::db::prepared::Joined;
use crate::turn::history_cache::{History, Known};
use crate::turn::sql::access::RoleNow;
use crate::turn::sql::claim::{attached_paths, create_claimed, created, ClaimAsk};
use crate::turn::sql::inputs::{self, InputsAsk, StartInputs};
use crate::turn::sql::preset::TurnPreset;
use crate::turn::sql::{abort_with, ready_ok, BudgetAsk, Claim, Refusal, Started};

/// The start's first round trip, answered: the conversation claimed, its history, the
/// user's role and the custom tools, read inside the still-open transaction. The caller
/// builds the model input from them and hands its estimated size to [`Opened::reserve`],
/// which finishes the transaction; dropping an `Opened` leaves the connection mid-transaction,
/// so callers always go on to `reserve`.
pub struct Opened<'c> {
    pub conversation: Conversation,
    /// The conversation's assistant and the user's memory notes.
    pub preset: TurnPreset,
    /// As much of the history as fits in the `history_room` given to [`open`].
    pub history: History,
    /// What to keep of the history for the conversation's next turn.
    pub known: Option<Known>,
    /// The user's role right now: its tools and approval policy.
    pub role: RoleNow,
    /// Admin-defined tools as they are now.
    pub custom_tools: Vec<CustomToolRow>,
    tx: Pipelined<'c>,
    account: AuthState,
    limit: budget::Limit,
    early: Option<Locked>,
    user_message: NewMessage,
    ask: BudgetAsk,
    claim: Claim,
}

/// How the start reads the history: whole, or what was stored after what is known.
enum Read {
    Whole(Recent),
    After(After),
}

/// How the start's budget is settled before its COMMIT.
enum Budgeted {
    /// No token or money limit: nothing is held.
    Unlimited,
    /// The period locked in the first round trip covers the call: this hold, stored with
    /// the user message ([`budget_early::hold`]).
    Fitted(Hold),
    /// Reserved exactly, in a round trip of its own.
    Exact,
}

/// What the start stores before its COMMIT besides a new conversation: the user message,
/// in the fitted hold's statement when there is one.
fn store_user_message(
    conn: &mut AsyncPgConnection,
    user_rows: &[NewMessage],
    fitted: Option<Joined>,
) -> BoxFuture<'static, QueryResult<()>> {
    match fitted {
        None => message::insert_many(conn, user_rows),
        Some(statement) => statement
            .with("m", message::insert_rows(user_rows).part())
            .execute(conn)
            // The period row is locked by this transaction, so its hold is always stored.
            .map(|r| r.and_then(|n| if n == 1 { Ok(()) } else { Err(NotFound) }))
            .boxed(),
    }
}

/// Checks the account and claims the conversation, reading its history (as much as could
/// fit in `history_room` estimated tokens) and the allowed tools, in the transaction's
/// first round trip; the start goes on with [`Opened::reserve`]. A refusal has rolled the
/// transaction back and kept nothing. With the history this process `known` from the
/// conversation's last start, only what was stored since is read ([`Known::extend`]); when
/// that cannot tell, the history is read whole in one more round trip.
///
/// With [`Claim::new_conversation`] there is nothing to claim or read: the conversation and
/// its earlier messages are inserted just before the user message, with the COMMIT.
///
/// Round trips: BEGIN with every read, the claim and the budget period's lock
/// ([`budget_early`]); then (in `reserve`) the user message, the hold fitted to the call and
/// the COMMIT, left to the caller in [`Started::committing`] so that its wait overlaps the
/// model call's. Only when the locked period falls short (too little left, or the period's
/// first call) does the exact reservation take a round trip of its own before the call.
pub async fn open(
    conn: &mut AsyncPgConnection,
    claim: Claim,
    user_message: NewMessage,
    ask: BudgetAsk,
    history_room: u64,
    known: Option<Known>,
) -> QueryResult<Result<Opened<'_>, Refusal>> {
    let stale = ask.now
        - chrono::Duration::from_std(claim.stale_after).unwrap_or(chrono::Duration::minutes(10));
    let (user_id, turn_id, process_id) = (claim.user_id, claim.turn_id, claim.process_id);
    let conversation_id = user_message.conversation_id;
    let mut tx = Pipelined::open(conn);

    // The history also counts the conversation's messages (the size bound). A conversation
    // the start creates has none: it is inserted with the COMMIT, in `reserve`.
    let history = match (&claim.new_conversation, &known) {
        (Some(_), _) => futures_util::future::ready(Ok(Read::Whole(Recent::default()))).boxed(),
        (None, Some(known)) => {
            message_recent::list_after(tx.conn(), conversation_id, known.last_seq())
                .map(|r| r.map(Read::After))
                .boxed()
        }
        (None, None) => message_recent::list_recent(tx.conn(), conversation_id, history_room)
            .map(|r| r.map(Read::Whole))
            .boxed(),
    };
    // The claim, then the account, its role, the key of a `/v1` call, the custom tools, the
    // assistant, the memory notes (memory is for chats, not `/v1` calls) and the budget
    // period: locked before the call's size is known, reserved in `reserve`
    // ([`budget_early`]), so the call waits for one round trip, not two.
    let inputs = inputs::read(
        tx.conn(),
        InputsAsk {
            conversation: conversation_id,
            user: user_id,
            assistant: claim.new_conversation.as_ref().and_then(|n| n.assistant_id),
            with_memory: claim.new_conversation.is_none(),
            api_key: claim.api_key,
            lock_at: Some(ask.now),
            claim: claim.new_conversation.is_none().then(|| ClaimAsk {
                turn_id,
                stale,
                process_id,
                provisional_title: crate::llm::title::provisional_with_files(
                    &user_message.content,
                    attached_paths(user_message.attachments.as_ref()),
                ),
            }),
        },
    );
    let reads = futures_util::future::try_join(history, inputs);
    let (history, inputs) = match tx.begin_with(reads).await {
        Ok(read) => read,
        Err(e) => return abort_with(tx, Err(e)).await,
    };
    let Some(StartInputs {
        access,
        key: key_state,
        preset,
        custom_tools,
        early,
        claimed,
    }) = inputs
    else {
        return abort_with(tx, Ok(Err(Refusal::Rejected(Rejection::NoAccount)))).await;
    };
    let account = access.account();
    let admitted = match (claim.api_key, key_state) {
        (Some(_), KeyState::Gone) => Err(Rejection::KeyRevoked),
        (Some(_), KeyState::Expired) => Err(Rejection::KeyExpired),
        (Some(_), KeyState::Valid) => account.admits(access.token_version),
        (None, _) => account.admits(claim.token_version),
    };
    if let Err(r) = admitted {
        return abort_with(tx, Ok(Err(Refusal::Rejected(r)))).await;
    }
    let claimed = match &claim.new_conversation {
        Some(new) => Some(created(conversation_id, user_id, new, ask.now)),
        None => claimed,
    };
    let Some(conversation) = claimed else {
        let owned =
            crate::db::models::conversation::find_owned(tx.conn(), conversation_id, user_id).await;
        let found = owned.map(|c| {
            Err(if c.is_some() {
                Refusal::Busy
            } else {
                Refusal::NotFound
            })
        });
        return abort_with(tx, found).await;
    };
    let (history, known) = match history {
        Read::Whole(recent) => Known::from_whole(recent),
        Read::After(after) => {
            let extended = known.and_then(|k| k.extend(after, history_room));
            match extended {
                Some((history, known)) => (history, Some(known)),
                // Something known here was removed (an edit), or more than is known may
                // fit: read it whole, in this transaction.
                None => {
                    match message_recent::list_recent(tx.conn(), conversation_id, history_room)
                        .await
                    {
                        Ok(recent) => Known::from_whole(recent),
                        Err(e) => return abort_with(tx, Err(e)).await,
                    }
                }
            }
        }
    };
    if history.total >= claim.max_messages {
        return abort_with(tx, Ok(Err(Refusal::Full))).await;
    }
    let limit = access.limit();
    Ok(Ok(Opened {
        conversation,
        preset,
        history,
        known: (claim.new_conversation.is_none())
            .then_some(known)
            .flatten(),
        role: access.role_now(),
        custom_tools,
        limit,
        account,
        tx,
        early,
        user_message,
        ask,
        claim,
    }))
}

impl Opened<'_> {
    /// Lowers the output the first call reserves room for (the conversation's model's cap).
    pub fn cap_output(&mut self, max_output: i64) {
        self.ask.max_output = self.ask.max_output.min(max_output);
        self.ask.min_output = self.ask.min_output.min(self.ask.max_output);
    }

    /// The price the first call is reserved at (a money budget needs it).
    pub fn price_calls_at(&mut self, price: Option<crate::domain::pricing::Price>) {
        self.ask.price = price;
    }

    /// The money budget the user's role sets, if any.
    pub fn money_budget(&self) -> Option<&crate::db::models::budget_money::MoneyLimit> {
        self.limit.money.as_ref()
    }

    /// Rolls the start back: nothing of it is stored.
    pub async fn abort(self) -> QueryResult<()> {
        abort_with(self.tx, Ok(())).await
    }

    /// Reserves budget for a first call of `input_estimate` tokens in, stores the user
    /// message, and leaves the COMMIT to [`Started::committing`]; nothing is kept when the
    /// budget refuses.
    pub async fn reserve(self, input_estimate: i64) -> QueryResult<Result<Started, Refusal>> {
        let Opened {
            conversation,
            preset: _,
            history: _,
            known: _,
            role,
            custom_tools,
            mut tx,
            account,
            limit,
            early,
            user_message,
            ask,
            claim,
        } = self;
        let (user_id, turn_id, process_id) = (claim.user_id, claim.turn_id, claim.process_id);
        let conversation_id = user_message.conversation_id;
        let reserve_ask = ReserveAsk {
            user_id,
            limit,
            input: input_estimate,
            price: ask.price,
            want: input_estimate + ask.max_output,
            need: input_estimate + ask.min_output,
            now: ask.now,
            hold_ttl: ask.hold_ttl,
            process_id,
            turn: Some(HoldTurn {
                turn_id,
                conversation_id,
            }),
        };
        // A money budget is reserved exactly, with the tokens, before anything is committed.
        let money = reserve_ask.limit.money.is_some();
        let (budgeted, fitted) = match early {
            _ if !money && reserve_ask.limit.tokens.is_none() => (Budgeted::Unlimited, None),
            // Enough is left: hold what the exact reservation would grant.
            Some(locked) if !money && locked.left >= reserve_ask.need => {
                let amount = locked.left.min(reserve_ask.want);
                let (statement, hold) = budget_early::hold(locked, &reserve_ask, amount);
                (Budgeted::Fitted(hold), Some(statement))
            }
            _ => (Budgeted::Exact, None),
        };
        // A new conversation and its earlier messages go first: the user message needs them.
        let create = match &claim.new_conversation {
            Some(new) => create_claimed(
                tx.conn(),
                conversation_id,
                user_id,
                new,
                turn_id,
                process_id,
            ),
            None => ready_ok(),
        };
        let user_rows = std::slice::from_ref(&user_message);
        let stored = store_user_message(tx.conn(), user_rows, fitted);
        let insert = futures_util::future::try_join(create, stored)
            .map(|r| r.map(drop))
            .boxed();
        let insert = match &claim.idempotency {
            None => insert,
            Some(key) => {
                let recorded = crate::db::models::idempotency::record(
                    tx.conn(),
                    user_id,
                    key,
                    conversation_id,
                    turn_id,
                    user_message.id,
                );
                futures_util::future::try_join(insert, recorded)
                    .map(|r| r.map(drop))
                    .boxed()
            }
        };
        let (hold, committing) = match budgeted {
            Budgeted::Unlimited => (
                budget::unlimited_hold(&reserve_ask),
                tx.commit_later(insert),
            ),
            Budgeted::Fitted(hold) => (hold, tx.commit_later(insert)),
            // Too little left for this call (or no period row yet): reserve exactly, as a
            // second round trip.
            Budgeted::Exact => {
                let store = futures_util::future::try_join(
                    budget::try_reserve(tx.conn(), &reserve_ask),
                    insert,
                );
                let first = match store.await {
                    Ok((first, ())) => first,
                    Err(e) => return abort_with(tx, Err(e)).await,
                };
                // The rollback undoes the claim and the user message if the budget refuses.
                match budget::reserve_after(tx.conn(), &reserve_ask, first).await {
                    Ok(Reserve::Granted(hold)) => (hold, tx.commit_later(ready_ok())),
                    Ok(refused) => {
                        return abort_with(tx, Ok(Err(Refusal::Budget(Box::new(refused))))).await
                    }
                    Err(e) => return abort_with(tx, Err(e)).await,
                }
            }
        };
        Ok(Ok(Started {
            conversation,
            account,
            input_estimate,
            role,
            custom_tools,
            hold,
            committing,
        }))
    }
}
