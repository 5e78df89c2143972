//! A turn's start reserves its first call's budget in two halves
//! (`agentchat::db::models::budget_early`): its first round trip locks the user's period row
//! and reads what is left, its second writes the hold once, at the size the call gets. These
//! tests hold it to the exact reservation's answer and to the lock in between.

use std::time::Duration;

use agentchat::db::models::budget::Reserve;
use agentchat::turn::sql::Refusal;
use agentchat_tests::*;
use diesel_async::RunQueryDsl;

use crate::database::{
    begun_turn, budgeted_conversation, lock_waiters, new_claim, open_turn, start_turn, started,
};

async fn another_conversation(app: &TestApp, session: &Session) -> uuid::Uuid {
    app.new_conversation(&session.access).await.parse().unwrap()
}

/// `start_turn`'s call wants 150 tokens (50 in, 100 out) and needs 60 (10 out). With plenty
/// left the start holds 150; with 120 left, all 120; with nothing left it is refused and holds
/// nothing. The period reserves exactly what its holds hold at every point.
#[tokio::test]
async fn a_start_holds_what_the_exact_reservation_would_grant() {
    let (app, s, first) = budgeted_conversation("fitted").await;
    let mut db = app.db().await;
    // The period's first call: no row to lock yet, so it reserves exactly.
    let (_, hold) = begun_turn(&mut db, s.user_id, first).await;
    assert_eq!(hold.amount, 150);
    // The row exists now: the start locks it and holds the call's size.
    let second = another_conversation(&app, &s).await;
    let (_, hold) = begun_turn(&mut db, s.user_id, second).await;
    assert_eq!(hold.amount, 150);
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (300, 2));

    // 120 left: more than the call needs, less than it wants.
    diesel::sql_query("UPDATE users SET token_budget = 420 WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(s.user_id)
        .execute(&mut db)
        .await
        .unwrap();
    let third = another_conversation(&app, &s).await;
    let (_, hold) = begun_turn(&mut db, s.user_id, third).await;
    assert_eq!(hold.amount, 120);
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (420, 3));

    // Nothing left: what the running turns hold is not free.
    let fourth = another_conversation(&app, &s).await;
    let refused = start_turn(&mut db, &new_claim(s.user_id), fourth, "hi")
        .await
        .unwrap();
    assert!(
        matches!(&refused, Err(Refusal::Budget(r)) if matches!(**r, Reserve::HeldByOthers)),
        "{refused:?}"
    );
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.spent, t.reserved, t.holds), (0, 420, 3));
}

/// From its first round trip to its COMMIT a start keeps the period row locked: another start
/// of the same user (in another conversation) waits for it, then finds the first one's hold
/// taken.
#[tokio::test]
async fn a_start_keeps_the_period_locked_until_its_commit() {
    let (app, s, first) = budgeted_conversation("locked").await;
    let mut db = app.db().await;
    begun_turn(&mut db, s.user_id, first).await;
    // 150 held: 300 more are left, enough for the two starts below and no more.
    diesel::sql_query("UPDATE users SET token_budget = 450 WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(s.user_id)
        .execute(&mut db)
        .await
        .unwrap();
    let (second, third) = (
        another_conversation(&app, &s).await,
        another_conversation(&app, &s).await,
    );

    let mut holder = app.db().await;
    let opened = match open_turn(&mut holder, &new_claim(s.user_id), second, "first")
        .await
        .unwrap()
    {
        Ok(opened) => opened,
        Err(refusal) => panic!("refused: {refusal:?}"),
    };
    let mut other = app.db().await;
    let user_id = s.user_id;
    let waiting = tokio::spawn(async move {
        let begun = start_turn(&mut other, &new_claim(user_id), third, "second").await;
        let started = started(begun);
        started.committing.wait(&mut other).await.unwrap();
        started.hold
    });
    let mut probe = app.db().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while lock_waiters(&mut probe).await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second start never waited for the first one's lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!waiting.is_finished());

    let first_start = started(opened.reserve(50).await);
    first_start.committing.wait(&mut holder).await.unwrap();
    let second_hold = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the second start goes on after the first one's COMMIT")
        .unwrap();
    assert_eq!((first_start.hold.amount, second_hold.amount), (150, 150));
    let t = app.budget_totals(s.user_id).await;
    assert_eq!((t.reserved, t.holds), (450, 3));
}
