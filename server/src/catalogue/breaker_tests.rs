//! Unit tests of the circuit breaker's state machine.

use super::*;
use std::time::Duration;

fn settings(cooldown_ms: u64) -> BreakerSettings {
    BreakerSettings {
        failures: 3,
        failure_rate: 0.5,
        min_calls: 6,
        min_users: 1,
        window: Duration::from_secs(60),
        cooldown: Duration::from_millis(cooldown_ms),
    }
}

/// The caller of the tests that are not about callers.
const ONE: Uuid = Uuid::from_u128(1);

fn down() -> LlmError {
    LlmError::Upstream {
        status: 503,
        message: "overloaded".into(),
    }
}

#[test]
fn consecutive_failures_open_it_and_a_probe_closes_it() {
    let b = Breaker::new(settings(30));
    assert_eq!(b.failed(&down(), Admission::Pass, ONE), None);
    assert_eq!(b.failed(&down(), Admission::Pass, ONE), None);
    assert!(matches!(
        b.failed(&down(), Admission::Pass, ONE),
        Some(Transition::Opened { .. })
    ));
    assert_eq!(b.admit(), Admission::Refused);
    assert_eq!(b.view().state, BreakerState::Open);
    assert!(b.view().last_error.is_some_and(|e| e.contains("503")));
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(b.state(), BreakerState::HalfOpen);
    assert_eq!(b.admit(), Admission::Probe);
    // One probe at a time.
    assert_eq!(b.admit(), Admission::Refused);
    assert!(matches!(
        b.succeeded(Admission::Probe),
        Some(Transition::Closed { .. })
    ));
    assert_eq!(b.admit(), Admission::Pass);
}

#[test]
fn a_failed_probe_opens_it_again_and_an_abandoned_one_lets_another_try() {
    let b = Breaker::new(settings(20));
    for _ in 0..3 {
        b.failed(&down(), Admission::Pass, ONE);
    }
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(b.admit(), Admission::Probe);
    b.abandon_probe();
    assert_eq!(b.admit(), Admission::Probe);
    assert!(matches!(
        b.failed(&down(), Admission::Probe, ONE),
        Some(Transition::Opened { .. })
    ));
    assert_eq!(b.admit(), Admission::Refused);
}

#[test]
fn the_failure_rate_opens_it_without_a_run_of_failures() {
    let b = Breaker::new(settings(1_000));
    let mut opened_at = None;
    for round in 1..=4 {
        assert_eq!(b.succeeded(Admission::Pass), None);
        if b.failed(&down(), Admission::Pass, ONE).is_some() {
            opened_at = Some(round);
            break;
        }
    }
    // 3 of 6 failed, never 2 in a row.
    assert_eq!(opened_at, Some(3));
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn another_process_opening_or_closing_it_is_taken() {
    let b = Breaker::new(settings(1_000));
    let t0 = Utc::now();
    b.adopt(
        Some(t0 + chrono::Duration::seconds(5)),
        Some("upstream_timeout".into()),
        t0,
    );
    assert_eq!(b.admit(), Admission::Refused);
    // A call let through before it opened finishing now does not close it.
    assert_eq!(b.succeeded(Admission::Pass), None);
    assert_eq!(b.admit(), Admission::Refused);
    // An older word (written before the opening) is stale.
    b.adopt(None, None, t0 - chrono::Duration::seconds(1));
    assert_eq!(b.admit(), Admission::Refused);
    b.adopt(None, None, t0 + chrono::Duration::seconds(1));
    assert_eq!(b.admit(), Admission::Pass);
}

#[test]
fn refusals_on_the_merits_do_not_count() {
    let bad_request = LlmError::Upstream {
        status: 400,
        message: "too long".into(),
    };
    assert!(!counts_against(&bad_request));
    assert!(counts_against(&LlmError::Timeout("first_byte")));
    assert!(counts_against(&LlmError::RateLimited { retry_after: None }));
}

#[test]
fn one_caller_alone_never_opens_it_two_do() {
    let b = Breaker::new(BreakerSettings {
        min_users: 2,
        ..settings(1_000)
    });
    // Ten failures in a row, all one member's (their prompts time out): still closed,
    // whether counted as a run or as the rate.
    for _ in 0..10 {
        assert_eq!(b.failed(&down(), Admission::Pass, ONE), None);
    }
    assert_eq!(b.state(), BreakerState::Closed);
    // A second member's call fails too: the endpoint is unwell for more than one.
    assert!(matches!(
        b.failed(&down(), Admission::Pass, Uuid::from_u128(2)),
        Some(Transition::Opened { .. })
    ));
    assert_eq!(b.admit(), Admission::Refused);
}
