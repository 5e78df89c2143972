//! The local backend: one bubblewrap jail per run (DESIGN §15). The jail has its own user,
//! PID, network (empty), IPC, UTS and cgroup namespaces, no capabilities, no way to make
//! namespaces of its own, a read-only `/usr`, the few `/etc` files Python and matplotlib
//! need, fresh `/proc` and minimal `/dev`, no `/sys`, size-capped tmpfs `/tmp` and
//! `/mnt/data`, the seccomp filters of `seccomp.rs`, and the rlimits `runner.py` puts on
//! itself before the code exists. bwrap is started with an empty environment (its own
//! process inside would otherwise show the server's at `/proc/1/environ`) and, when the
//! server runs as root, as `nobody`: `RLIMIT_NPROC` does not bind root.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use command_fds::FdMapping;
use nix::sys::memfd::{memfd_create, MFdFlags};

use super::capture::{read_bounded, read_head_tail};
use super::fonts::{self, FontCache};
use super::jail::{self, Ended, Fds};
use super::outputs;
use super::run_end::{classify, exit_code};
use super::{seccomp, Backend, Isolation, Job, JobLimits, LimitHit, RunResult, SandboxError};

/// The preamble every run starts with.
const RUNNER: &str = include_str!("runner.py");
/// The uid bwrap runs as when the server is root, and the uid inside the jail.
const NOBODY: u32 = 65534;
/// Open files per process in the jail.
const MAX_OPEN_FILES: u64 = 256;
/// `/etc` files Python, numpy (its BLAS is an alternative) and matplotlib read; absent ones
/// are left out.
const ETC_FILES: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/matplotlibrc",
    "/etc/localtime",
    "/etc/fonts",
    "/etc/mime.types",
];
/// What the code sees in its environment.
const JAIL_ENV: &[(&str, &str)] = &[
    ("PATH", "/usr/bin:/bin"),
    ("HOME", "/tmp"),
    ("TMPDIR", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("MPLBACKEND", "Agg"),
    ("MPLCONFIGDIR", fonts::CACHE_DIR),
    ("OPENBLAS_NUM_THREADS", "1"),
    ("OMP_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
];
/// How long the output pipes may stay open after the jail ended (nothing should hold them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Where the backend finds its programs.
#[derive(Debug, Clone)]
pub struct Programs {
    pub bwrap: PathBuf,
    pub python: PathBuf,
}

/// The bubblewrap backend, probed once.
pub struct BubblewrapBackend {
    programs: Programs,
    filters: Arc<Vec<Vec<u8>>>,
    isolation: Isolation,
    /// Set when the server runs as root: bwrap drops to this uid.
    run_as: Option<u32>,
    /// matplotlib's font list, built at the first run that may plot (`None`: it failed).
    fonts: tokio::sync::OnceCell<Option<FontCache>>,
}

impl BubblewrapBackend {
    /// A backend that refuses every run, with `reason` (the sandbox is switched off).
    pub fn unavailable(programs: Programs, reason: impl Into<String>) -> Self {
        Self {
            programs,
            filters: Arc::new(Vec::new()),
            isolation: Isolation::Unavailable(reason.into()),
            run_as: None,
            fonts: tokio::sync::OnceCell::new(),
        }
    }

    /// The backend `[sandbox]` asks for: switched off, or probed.
    pub async fn from_settings(s: &crate::config::SandboxSettings) -> Self {
        let programs = Programs {
            bwrap: s.bwrap.clone(),
            python: s.python.clone(),
        };
        if s.enabled {
            Self::probe(programs).await
        } else {
            Self::unavailable(programs, "switched off ([sandbox] enabled = false)")
        }
    }

    /// Checks that a jail can be made here (bwrap runs, user namespaces work, Python starts
    /// in it) by running one; the isolation says what was found.
    pub async fn probe(programs: Programs) -> Self {
        let run_as = nix::unistd::geteuid().is_root().then_some(NOBODY);
        let mut backend = Self {
            programs,
            filters: Arc::new(Vec::new()),
            isolation: Isolation::Ok,
            run_as,
            fonts: tokio::sync::OnceCell::new(),
        };
        backend.isolation = match backend.check().await {
            Ok(()) => Isolation::RlimitsOnly,
            Err(reason) => Isolation::Unavailable(reason),
        };
        backend
    }

    async fn check(&mut self) -> Result<(), String> {
        let python = &self.programs.python;
        if !under_usr(python) {
            return Err(format!(
                "python {} is not under /usr (the jail sees only /usr)",
                python.display()
            ));
        }
        if !python.is_file() {
            return Err(format!("python {} not found", python.display()));
        }
        if !self.programs.bwrap.is_file() {
            return Err(format!(
                "bubblewrap not found at {} (install the `bubblewrap` package)",
                self.programs.bwrap.display()
            ));
        }
        self.filters = Arc::new(seccomp::filters()?);
        let job = Job {
            code: "print('ok')".into(),
            inputs: Vec::new(),
            limits: probe_limits(),
        };
        let ran = self.jail(job, None).await.map_err(|e| e.to_string())?;
        if ran.exit == Some(0) && ran.stdout == "ok\n" {
            return Ok(());
        }
        let said = ran.stderr.lines().next().unwrap_or("no message").trim();
        Err(format!("a test jail failed (exit {:?}): {said}", ran.exit))
    }

    /// Runs `job` in a fresh jail.
    async fn jail(&self, job: Job, fonts: Option<&FontCache>) -> Result<RunResult, SandboxError> {
        check_inputs(&job)?;
        let limits = job.limits.clone();
        let (args, fds) = self.arguments(&job, fonts).map_err(SandboxError::Start)?;
        let started = Instant::now();
        let jail = jail::start(&self.programs.bwrap, &args, self.run_as, fds)
            .map_err(|e| SandboxError::Start(format!("starting bwrap: {e}")))?;
        let keep = limits.max_output_bytes;
        let stdout = tokio::spawn(read_head_tail(jail.stdout, keep));
        let stderr = tokio::spawn(read_head_tail(jail.stderr, keep));
        let report = tokio::spawn(read_bounded(
            jail.report,
            outputs::max_report_bytes(&limits),
        ));
        let killer = jail.killer;
        let mut ended = jail.ended;
        let (end, timed_out) = tokio::select! {
            end = &mut ended => (end.ok(), false),
            () = tokio::time::sleep(limits.wall) => {
                killer.kill();
                (ended.await.ok(), true)
            }
        };
        let duration = started.elapsed();
        let end = end.unwrap_or(Ended {
            status: None,
            cpu: Duration::ZERO,
            max_rss_bytes: 0,
        });
        let drained = tokio::time::timeout(DRAIN_GRACE, async {
            (stdout.await, stderr.await, report.await)
        })
        .await;
        let (Ok(stdout), Ok(stderr), Ok((report, cut))) = drained.unwrap_or((
            Ok(Default::default()),
            Ok(Default::default()),
            Ok(Default::default()),
        )) else {
            return Err(SandboxError::Start(
                "reading the jail's output failed".into(),
            ));
        };
        let report = outputs::parse(&report, cut, &limits);
        let stderr_text = stderr.text();
        let exit = exit_code(&end, &report);
        let limit_hit = classify(&end, &report, &limits, &stderr_text)
            .or_else(|| report.files_limited().then_some(LimitHit::Files))
            .or_else(|| (stdout.overflowed() || stderr.overflowed()).then_some(LimitHit::Output));
        let max_rss_bytes = report.peak_rss_bytes(end.max_rss_bytes);
        let mut skipped = report.skipped;
        if report.skipped_more > 0 {
            skipped.push(format!("… and {} more", report.skipped_more));
        }
        Ok(RunResult {
            exit: if timed_out { None } else { exit },
            timed_out,
            limit_hit,
            stdout: stdout.text(),
            stderr: stderr_text,
            duration,
            cpu: end.cpu,
            max_rss_bytes,
            outputs: report.outputs,
            skipped,
        })
    }

    /// bwrap's arguments and the descriptors they name: 4.. the filters, then the runner,
    /// the code and the inputs (each a sealed-off memory file bwrap copies in read-only).
    fn arguments(
        &self,
        job: &Job,
        fonts: Option<&FontCache>,
    ) -> Result<(Vec<String>, Fds), String> {
        let mut fds = Vec::new();
        let mut next_fd = 4;
        let mut pass = |name: &str, bytes: &[u8]| -> Result<String, String> {
            let fd = memory_file(name, bytes)?;
            let n = next_fd;
            next_fd += 1;
            fds.push(FdMapping {
                parent_fd: fd,
                child_fd: n,
            });
            Ok(n.to_string())
        };
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| (*s).to_owned()));
        push(&[
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--uid",
            "65534",
            "--gid",
            "65534",
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
        ]);
        for etc in ETC_FILES {
            push(&["--ro-bind-try", etc, etc]);
        }
        let l = &job.limits;
        let (tmp, data) = (l.tmp_bytes.to_string(), l.data_bytes.to_string());
        // bwrap's /dev is an unbounded tmpfs: read-only, with a bounded /dev/shm in it.
        push(&["--proc", "/proc", "--dev", "/dev"]);
        push(&[
            "--size",
            &tmp,
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
        ]);
        push(&[
            "--size",
            &tmp,
            "--tmpfs",
            "/tmp",
            "--dir",
            "/tmp/matplotlib",
        ]);
        push(&[
            "--size",
            &data,
            "--tmpfs",
            "/mnt/data",
            "--dir",
            "/mnt/data/outputs",
        ]);
        for (key, value) in JAIL_ENV {
            push(&["--setenv", key, value]);
        }
        for filter in self.filters.iter() {
            let fd = pass("seccomp", filter)?;
            push(&["--add-seccomp-fd", &fd]);
        }
        let runner = pass("runner.py", RUNNER.as_bytes())?;
        push(&["--ro-bind-data", &runner, "/sandbox/runner.py"]);
        let code = pass("main.py", job.code.as_bytes())?;
        push(&["--ro-bind-data", &code, "/sandbox/main.py"]);
        if let Some(fonts) = fonts {
            let fd = pass("fonts", &fonts.bytes)?;
            let dest = format!("{}/{}", fonts::CACHE_DIR, fonts.name);
            push(&["--ro-bind-data", &fd, &dest]);
        }
        for input in &job.inputs {
            let fd = pass("input", &input.bytes)?;
            let dest = format!("/mnt/data/{}", input.name);
            push(&["--ro-bind-data", &fd, &dest]);
        }
        push(&["--remount-ro", "/", "--chdir", "/mnt/data"]);
        let python = self.programs.python.display().to_string();
        let settings = runner_settings(l);
        push(&[
            "--",
            &python,
            "-I",
            "-S",
            "-u",
            "/sandbox/runner.py",
            &settings,
        ]);
        Ok((a, Fds(fds)))
    }
}

#[async_trait]
impl Backend for BubblewrapBackend {
    fn isolation(&self) -> Isolation {
        self.isolation.clone()
    }

    async fn run(&self, job: Job) -> Result<RunResult, SandboxError> {
        if let Isolation::Unavailable(reason) = &self.isolation {
            return Err(SandboxError::Unavailable(reason.clone()));
        }
        let fonts = if fonts::wanted(&job.code) {
            self.fonts.get_or_init(|| self.build_fonts()).await.as_ref()
        } else {
            None
        };
        self.jail(job, fonts).await
    }
}

impl BubblewrapBackend {
    /// matplotlib's font list, made by our own code in a jail.
    async fn build_fonts(&self) -> Option<FontCache> {
        let mut limits = probe_limits();
        limits.max_file_bytes = 4 << 20;
        limits.data_bytes = 16 << 20;
        limits.memory_bytes = 1 << 30;
        let job = Job {
            code: fonts::BUILD.into(),
            inputs: Vec::new(),
            limits,
        };
        let built = self
            .jail(job, None)
            .await
            .ok()
            .and_then(|r| fonts::from_build(&r));
        if built.is_none() {
            tracing::warn!(
                "sandbox: matplotlib's font list could not be built; each plot scans the fonts"
            );
        }
        built
    }
}

/// The limits `runner.py` puts on itself, as its one argument: `key=value,...` of integers
/// (the runner parses that without importing json, which would cost every run `re`).
fn runner_settings(l: &JobLimits) -> String {
    let settings: [(&str, u64); 7] = [
        ("memory_bytes", l.memory_bytes),
        ("cpu_secs", l.cpu.as_secs().max(1)),
        ("max_processes", u64::from(l.max_processes)),
        ("max_file_size", l.tmp_bytes.max(l.data_bytes)),
        ("max_open_files", MAX_OPEN_FILES),
        ("max_files", u64::from(l.max_files)),
        ("max_file_bytes", l.max_file_bytes),
    ];
    settings
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Input names are plain relative paths below `/mnt/data`, never `outputs`.
fn check_inputs(job: &Job) -> Result<(), SandboxError> {
    for input in &job.inputs {
        let path = Path::new(&input.name);
        let plain =
            !input.name.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
        let first = path.components().next();
        if !plain || first == Some(Component::Normal("outputs".as_ref())) {
            return Err(SandboxError::Start(format!(
                "input `{}` is not a plain relative path outside outputs/",
                input.name
            )));
        }
    }
    Ok(())
}

fn under_usr(path: &Path) -> bool {
    ["/usr/", "/bin/"].iter().any(|p| path.starts_with(p))
}

/// `bytes` in an anonymous memory file, rewound for bwrap to read.
fn memory_file(name: &str, bytes: &[u8]) -> Result<std::os::fd::OwnedFd, String> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC).map_err(|e| format!("memfd: {e}"))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)
        .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
        .map_err(|e| format!("memfd: {e}"))?;
    Ok(file.into())
}

/// Small limits for the start-up probe.
fn probe_limits() -> JobLimits {
    JobLimits {
        wall: Duration::from_secs(20),
        cpu: Duration::from_secs(10),
        memory_bytes: 256 << 20,
        max_processes: 16,
        tmp_bytes: 1 << 20,
        data_bytes: 1 << 20,
        max_output_bytes: 4096,
        max_files: 1,
        max_file_bytes: 1024,
    }
}
