//! Tests of [`super`]: ids, and followers resuming after their last id.

use super::*;

fn ids(r: Read) -> Vec<String> {
    match r {
        Read::Events(v) => v.into_iter().map(|(id, _)| id.to_sse()).collect(),
        Read::Behind => vec!["behind".into()],
    }
}

fn delta(t: &str) -> TurnEvent {
    TurnEvent::TextDelta { text: t.into() }
}

#[test]
fn ids_round_trip_and_order() {
    for s in ["0", "1.0", "3.57", "end"] {
        assert_eq!(EventId::parse(s).unwrap().to_sse(), s);
    }
    for bad in [
        "",
        "1",
        "0.5",
        "a.b",
        "1.",
        ".1",
        "-1.2",
        "1.2.3",
        &"9".repeat(40),
    ] {
        assert_eq!(EventId::parse(bad), None, "{bad}");
    }
    assert!(EventId::Start < EventId::parse("1.0").unwrap());
    assert!(EventId::parse("1.99").unwrap() < EventId::parse("2.1").unwrap());
    assert!(EventId::parse("9.9").unwrap() < EventId::End);
}

#[test]
fn a_follower_resumes_after_its_last_id_and_misses_nothing() {
    let log = TurnLog::new(uuid::Uuid::nil());
    log.push(TurnEvent::TurnStart {
        message_id: uuid::Uuid::nil(),
    });
    log.begin_step(1);
    log.push(delta("Hel"));
    log.push(delta("lo"));
    log.push(TurnEvent::Usage {
        input_tokens: 1,
        output_tokens: 2,
    });
    assert_eq!(
        ids(log.read_after(None, 0, 100)),
        ["0", "1.3", "1.5", "1.6"]
    );
    assert_eq!(
        ids(log.read_after(EventId::parse("1.3"), 0, 100)),
        ["1.5", "1.6"]
    );
    log.committed();
    // The step just committed stays in memory: its own stream goes on without Postgres.
    assert_eq!(
        ids(log.read_after(EventId::parse("1.3"), 0, 100)),
        ["1.5", "1.6"]
    );
    log.begin_step(2);
    log.push(delta("again"));
    assert_eq!(ids(log.read_after(EventId::parse("1.6"), 0, 100)), ["2.5"]);
    log.committed();
    // Step 1 is gone from memory now: a follower inside it reads Postgres first.
    assert_eq!(
        ids(log.read_after(EventId::parse("1.3"), 0, 100)),
        ["behind"]
    );
    // One that has all of step 1 reads step 2 here.
    assert_eq!(ids(log.read_after(EventId::parse("1.6"), 1, 100)), ["2.5"]);
    log.begin_step(3);
    log.push(TurnEvent::Done {
        message_id: None,
        finish_reason: crate::turn::FinishReason::Stop,
    });
    // Having had steps 1 and 2 whole from Postgres, it continues here.
    assert_eq!(ids(log.read_after(EventId::parse("2.5"), 2, 100)), ["end"]);
    assert!(ids(log.read_after(Some(EventId::End), 0, 100)).is_empty());
}
