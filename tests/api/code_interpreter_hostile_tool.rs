//! The hostile list of issue 47 item 6, each run as a `run_python` tool call through the
//! running server with a real jail (the backend-level suite is `sandbox_jail`): each is
//! contained with a clear tool result the model can read, nothing of the host leaks, no
//! process is left behind, and the server keeps answering another user between the runs.

use std::time::Duration;

use agentchat_tests::fake_upstream::{FakeUpstream, Reply};
use serde_json::{json, Value};

use crate::code_interpreter::{granted, run};

/// One payload: its name, the tool's arguments and what its envelope must show.
type Case<'a> = (&'a str, Value, Box<dyn Fn(&Value)>);

fn ws() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("agentchat-ci-ws-{}", uuid::Uuid::new_v4().simple()))
}

/// The tool's envelope of one run (`data`), after checking the call itself succeeded.
fn data(result: &Value) -> &Value {
    assert_eq!(result["success"], true, "{result}");
    &result["data"]
}

fn stdout(d: &Value) -> &str {
    d["stdout"].as_str().unwrap_or_default()
}

/// Whether a host process's command line holds `marker`.
fn host_process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn hostile_code_through_the_tool_is_contained_and_the_server_keeps_answering() {
    std::env::set_var("AGENTCHAT_TOOL_JAIL_CANARY", "canary-9a41c7e3");
    let fake = FakeUpstream::start().await;
    let (app, [_admin, member, bystander]) = granted(&fake, ws())
        .settings(|s| {
            s.sandbox.timeout_secs = 10;
            s.sandbox.memory_mb = 256;
        })
        .start_as(["boss", "ana", "bea"])
        .await;
    let canary = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    canary.set_nonblocking(true).unwrap();
    let canary_port = canary.local_addr().unwrap().port();
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentchat.example.toml")
        .canonicalize()
        .unwrap();
    let t = |code: &str| json!({"code": code});
    let cases: Vec<Case> = vec![
        (
            "fork bomb",
            t("import os\nwhile True:\n    os.fork()\n"),
            Box::new(|d| assert_eq!(d["limit_hit"], "processes", "{d}")),
        ),
        (
            "busy loop",
            json!({"code": "while True:\n    pass\n", "timeout_secs": 2}),
            Box::new(|d| {
                assert!(
                    d["timed_out"] == true || d["limit_hit"] == "cpu",
                    "{d}"
                )
            }),
        ),
        (
            "a daemonised sleeper",
            t("import os, subprocess\nif os.fork() == 0:\n    os.setsid()\n    \
               subprocess.Popen(['sleep', '4242'])\n    os._exit(0)\nprint('parent done')\n"),
            Box::new(|d| {
                assert_eq!(d["exit"], 0, "{d}");
                assert!(stdout(d).contains("parent done"), "{d}");
            }),
        ),
        (
            "100 MB of stdout",
            t("import sys\nline = 'x' * 999 + '\\n'\nprint('BEGIN')\n\
               for _ in range(100_000):\n    sys.stdout.write(line)\nprint('END')\n"),
            Box::new(|d| {
                assert_eq!(d["limit_hit"], "output", "{d}");
                let out = stdout(d);
                assert!(out.starts_with("BEGIN") && out.trim_end().ends_with("END"), "{d}");
                assert!(out.len() < 64 * 1024, "{}", out.len());
            }),
        ),
        (
            "filling the disk",
            t("import errno\nfor path in ['/mnt/data/big', '/tmp/big']:\n    try:\n\
               \x20       with open(path, 'wb') as f:\n            while True:\n\
               \x20               f.write(b'x' * (1 << 20))\n    except OSError as e:\n\
               \x20       print(path, errno.errorcode[e.errno])\n"),
            Box::new(|d| {
                assert_eq!(d["exit"], 0, "{d}");
                assert_eq!(stdout(d).lines().count(), 2, "{d}");
                assert!(
                    stdout(d)
                        .lines()
                        .all(|l| l.ends_with("ENOSPC") || l.ends_with("EFBIG")),
                    "{d}"
                );
            }),
        ),
        (
            "10,000 small files",
            t("for i in range(10_000):\n\
               \x20   with open(f'/mnt/data/outputs/f{i:05}.txt', 'w') as f:\n        f.write('x')\n"),
            Box::new(|d| {
                assert_eq!(d["limit_hit"], "files", "{d}");
                assert!(d["files"].as_array().unwrap().len() <= 20, "{d}");
            }),
        ),
        (
            "the host's secrets and files",
            t(&format!(
                "import glob\nfor p in glob.glob('/proc/*/environ'):\n    print(p, open(p, 'rb').read())\n\
                 for p in ['/etc/shadow', {:?}, '/root/.bash_history', '/sys/kernel/notes']:\n    try:\n\
                 \x20       open(p).read()\n        print('READ', p)\n    except OSError as e:\n\
                 \x20       print('DENIED', p)\n\
                 for p in ['/x', '/usr/x', '/etc/x', '/mnt/x']:\n    try:\n\
                 \x20       open(p, 'w').write('x')\n        print('WROTE', p)\n    except OSError:\n\
                 \x20       print('DENIED', p)\n",
                config.display().to_string()
            )),
            Box::new(|d| {
                let out = stdout(d);
                assert!(!out.contains("canary-9a41c7e3"), "{out}");
                assert!(!out.contains("READ "), "{out}");
                assert!(!out.contains("WROTE "), "{out}");
                assert_eq!(out.matches("DENIED").count(), 8, "{out}");
            }),
        ),
        (
            "the network",
            t(&format!(
                "import socket\nfor host, port in [('127.0.0.1', 5432), ('127.0.0.1', {canary_port})]:\n\
                 \x20   try:\n        socket.create_connection((host, port), timeout=2)\n        print('CONNECTED', port)\n\
                 \x20   except OSError as e:\n        print('REFUSED', port)\n\
                 try:\n    socket.getaddrinfo('example.com', 80)\n    print('RESOLVED')\nexcept OSError:\n    print('NO DNS')\n"
            )),
            Box::new(|d| {
                let out = stdout(d);
                assert!(!out.contains("CONNECTED"), "{out}");
                assert_eq!(out.matches("REFUSED").count(), 2, "{out}");
                assert!(out.contains("NO DNS"), "{out}");
            }),
        ),
        (
            "ptrace, TIOCSTI and unshare",
            t("import ctypes, errno, subprocess, termios\nlibc = ctypes.CDLL(None, use_errno=True)\n\
               def check(name, ret):\n    print(name, 'ALLOWED' if ret == 0 else errno.errorcode.get(ctypes.get_errno(), '?'))\n\
               check('ptrace', libc.ptrace(16, 1, None, None))\n\
               check('tiocsti', libc.ioctl(0, ctypes.c_ulong(termios.TIOCSTI), ctypes.c_char_p(b'x')))\n\
               r = subprocess.run(['unshare', '-U', 'true'], capture_output=True)\nprint('unshare', r.returncode)\n"),
            Box::new(|d| {
                let out = stdout(d);
                assert!(out.contains("ptrace EPERM"), "{out}");
                assert!(out.contains("tiocsti EPERM"), "{out}");
                assert!(!out.contains("unshare 0"), "{out}");
            }),
        ),
        (
            "kill -9 -1",
            t("import os, signal, subprocess\np = subprocess.Popen(['sleep', '60'])\n\
               os.kill(-1, signal.SIGKILL)\nprint('still here', p.wait())\n"),
            Box::new(|d| assert_eq!(stdout(d), "still here -9\n", "{d}")),
        ),
        (
            "a symlink in outputs",
            t("import os\nos.symlink('/etc/passwd', '/mnt/data/outputs/passwd')\n\
               open('/mnt/data/outputs/real.txt', 'w').write('real')\n"),
            Box::new(|d| {
                let files: Vec<String> = d["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["path"].as_str().unwrap().to_owned())
                    .collect();
                assert_eq!(files.len(), 1, "{d}");
                assert!(files[0].ends_with("real.txt"), "{d}");
            }),
        ),
    ];
    for (name, args, check) in cases {
        let (result, _) = run(&app, &fake, &member.access, args).await;
        check(data(&result));
        // The server answers another user between the runs.
        fake.push(Reply::text("still here"));
        let conv = app.new_conversation(&bystander.access).await;
        let events = tokio::time::timeout(
            Duration::from_secs(10),
            app.chat(&bystander.access, &conv, "hello"),
        )
        .await
        .unwrap_or_else(|_| panic!("the server stopped answering after {name}"));
        assert_eq!(events.last().unwrap().event, "done", "after {name}");
    }
    assert!(
        canary.accept().is_err(),
        "the canary server was reached from a jail"
    );
    assert!(
        !host_process_with("sleep 4242"),
        "a daemonised child outlived its run"
    );
    // Nothing was written beyond the jail: the member's workspace holds only outputs.
    let files: Value = app
        .get_as(&member.access, "/api/files")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        !files.to_string().contains("passwd"),
        "a symlink's target reached the workspace: {files}"
    );
}
