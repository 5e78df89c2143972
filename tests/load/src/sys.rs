//! /proc readings (CPU ticks, RSS) and Postgres counters (through `psql`).

use std::collections::HashMap;
use std::process::Command;

/// Clock ticks per second for /proc/<pid>/stat (USER_HZ; 100 on every Linux we target).
pub const CLK_TCK: f64 = 100.0;

/// utime + stime of one process, in ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm may contain spaces: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// VmRSS in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU ticks of Postgres processes: (backends serving `db`, every postgres process).
/// Per-pid so deltas survive processes coming and going.
#[derive(Debug, Default, Clone)]
pub struct PgCpu {
    pub db_backends: HashMap<u32, u64>,
    pub all: HashMap<u32, u64>,
}

pub fn pg_cpu(db: &str) -> PgCpu {
    let mut out = PgCpu::default();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd);
        let is_child = cmd.starts_with("postgres:");
        let is_master = !is_child
            && cmd
                .split('\0')
                .next()
                .is_some_and(|a| a.ends_with("/postgres"));
        if !is_child && !is_master {
            continue;
        }
        let Some(t) = cpu_ticks(pid) else { continue };
        out.all.insert(pid, t);
        // Backend title: "postgres: 15/main: <user> <db> <host>(port) <state>"
        if is_child && cmd.split_whitespace().any(|w| w == db) {
            out.db_backends.insert(pid, t);
        }
    }
    out
}

fn delta(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> u64 {
    after
        .iter()
        .map(|(pid, t)| t.saturating_sub(*before.get(pid).unwrap_or(&0)))
        .sum()
}

impl PgCpu {
    /// (db backends ms, all postgres ms) since `before`.
    pub fn since(&self, before: &PgCpu) -> (f64, f64) {
        let ms = |t: u64| t as f64 * 1000.0 / CLK_TCK;
        (
            ms(delta(&before.db_backends, &self.db_backends)),
            ms(delta(&before.all, &self.all)),
        )
    }
}

/// Runs one query against the `postgres` maintenance database (so our reads never count as
/// transactions of the database under test) and returns the first value.
pub fn psql(pg_host: &str, pg_port: &str, sql: &str) -> anyhow::Result<String> {
    psql_in(pg_host, pg_port, "postgres", sql)
}

/// Runs one statement in database `db` and returns the first value.
pub fn psql_in(pg_host: &str, pg_port: &str, db: &str, sql: &str) -> anyhow::Result<String> {
    let out = Command::new("psql")
        .args([
            "-h", pg_host, "-p", pg_port, "-U", "postgres", "-d", db, "-XAtq", "-c", sql,
        ])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `xact_commit` of `db` (stats lag: a backend flushes its counters at most once a second and,
/// when idle, within ~10 s).
pub fn xact_commit(pg_host: &str, pg_port: &str, db: &str) -> Option<u64> {
    psql(
        pg_host,
        pg_port,
        &format!("SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"),
    )
    .ok()?
    .parse()
    .ok()
}

/// Next transaction id to be assigned (cluster-wide; counts only transactions that wrote).
pub fn next_xid(pg_host: &str, pg_port: &str) -> Option<u64> {
    psql(
        pg_host,
        pg_port,
        "SELECT pg_snapshot_xmax(pg_current_snapshot())::text",
    )
    .ok()?
    .parse()
    .ok()
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

pub fn nproc() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

pub fn mem_total_mib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|k| k / 1024)
        .unwrap_or(0)
}
