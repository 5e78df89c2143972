use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

fn limits(wall_ms: u64) -> ProcessLimits {
    ProcessLimits {
        memory_bytes: 256 << 20,
        cpu_secs: 5,
        wall: Duration::from_millis(wall_ms),
        stack_bytes: 1 << 20,
        max_output_bytes: 1000,
    }
}

async fn sh(script: &str, stdin: &[u8], wall_ms: u64) -> Ending {
    let spawn = Spawn {
        program: Path::new("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        stdin: stdin.to_vec(),
    };
    run(spawn, &limits(wall_ms), std::future::pending()).await
}

#[tokio::test]
async fn a_child_reads_its_input_and_its_output_comes_back() {
    let ended = sh("exec /bin/cat", b"hello", 10_000).await;
    assert_eq!(
        ended,
        Ending::Exited {
            code: 0,
            stdout: b"hello".to_vec()
        }
    );
}

#[tokio::test]
async fn the_child_inherits_no_environment() {
    assert!(std::env::vars().next().is_some());
    let spawn = Spawn {
        program: Path::new("/usr/bin/env"),
        args: Vec::new(),
        stdin: Vec::new(),
    };
    let ended = run(spawn, &limits(10_000), std::future::pending()).await;
    assert_eq!(
        ended,
        Ending::Exited {
            code: 0,
            stdout: Vec::new()
        }
    );
}

#[tokio::test]
async fn a_child_past_its_wall_time_is_killed() {
    let start = Instant::now();
    assert_eq!(
        sh("exec /bin/sleep 30", b"", 300).await,
        Ending::WallTimeout
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_cancelled_child_is_killed() {
    let spawn = Spawn {
        program: Path::new("/bin/sleep"),
        args: vec!["30".into()],
        stdin: Vec::new(),
    };
    let start = Instant::now();
    let cancel = tokio::time::sleep(Duration::from_millis(200));
    assert_eq!(run(spawn, &limits(30_000), cancel).await, Ending::Cancelled);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn output_past_the_bound_is_not_kept() {
    let ended = sh("exec /usr/bin/head -c 100000 /dev/zero", b"", 10_000).await;
    assert_eq!(ended, Ending::OutputTooLarge);
}

#[tokio::test]
async fn endings_by_signal_are_told_apart() {
    assert_eq!(
        sh("kill -SEGV $$", b"", 10_000).await,
        Ending::Crashed { signal: 11 }
    );
    assert_eq!(
        sh("ulimit -t 1; while :; do :; done", b"", 20_000).await,
        Ending::CpuLimit
    );
    assert_eq!(
        sh(
            "echo 'memory allocation of 99 bytes failed' >&2; kill -ABRT $$",
            b"",
            10_000
        )
        .await,
        Ending::Memory
    );
    assert_eq!(
        sh(
            "echo \"thread 'x' has overflowed its stack\" >&2; kill -ABRT $$",
            b"",
            10_000
        )
        .await,
        Ending::StackOverflow
    );
}

#[test]
fn child_limits_round_trip_through_their_flags() {
    // `apply` binds the calling process, so it is exercised through the extractor child
    // (tests/api/knowledge_bombs.rs), not here.
    let l = limits(1000);
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        limits: ChildLimits,
    }
    let parsed = <Cli as clap::Parser>::try_parse_from(
        std::iter::once("x".to_owned()).chain(l.child_args()),
    )
    .unwrap();
    assert_eq!(
        parsed.limits,
        ChildLimits {
            memory_bytes: l.memory_bytes,
            cpu_secs: l.cpu_secs,
            stack_bytes: l.stack_bytes,
            limited: false,
        }
    );
}
