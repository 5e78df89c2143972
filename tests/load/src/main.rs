//! AgentChat load kit: a fake OpenAI upstream, a load generator driving the real API, and a
//! report. See tests/load/README.md. Subcommands:
//!
//! * `agentchat-load run [--smoke] [options]` — everything: starts the fake upstream and the
//!   server (fresh database), runs the scenarios, writes report.md + report.json, cleans up.
//! * `agentchat-load fake-upstream [--port N]` — only the fake upstream (loopback).
//! * `agentchat-load mcp-server [--port N]` — only the fast MCP server (loopback).

mod bench;
mod burst;
mod catalogue;
mod client;
mod fake;
mod fake_images;
mod held;
mod image;
mod image_probe;
mod interp;
mod knowledge;
mod mcp;
mod probe;
mod report;
mod report_catalogue;
mod report_compare;
mod report_extra;
mod report_held;
mod report_image;
mod report_v1;
mod scenarios;
mod search;
mod soak;
mod stats;
mod sys;
mod v1;

use std::net::{Ipv4Addr, SocketAddr};

fn usage() -> ! {
    eprintln!(
        "usage:\n  agentchat-load run [--smoke] [--out DIR] [--server-bin PATH] [--results-md PATH]\n\
         \x20     [--users N] [--levels 8,32,128] [--step-secs S] [--open-secs S] [--streams 1000,5000]\n\
         \x20     [--stream-cycles N] [--p99-bound-ms MS] [--ttft-ms MS] [--deltas N] [--gap-ms MS]\n\
         \x20     [--stats-wait-secs S] [--history N] [--command TEXT] [--scenarios plain,tool,mcp,v1,image,catalogue]\n\
         \x20     [--burst N] [--soak SECS] [--soak-streams N]\n\
         \x20     [--held N] [--held-rate R] [--demo-delay-ms MS]\n\
         \x20     [--search] [--search-own N] [--search-others N] [--search-secs S]\n\
         \x20     [--interp] [--interp-runs N] [--interp-secs S]\n\
         \x20     [--knowledge] [--knowledge-files N] [--knowledge-max-kib K] [--knowledge-chunks N]\n\
         \x20     [--knowledge-users N] [--knowledge-secs S] [--knowledge-requests N]\n\
         \x20     [--no-knowledge-upstream] [--embed-delay-ms MS] [--pgvector-url URL] [--keep-db]\n\
         \x20 agentchat-load fake-upstream [--port N]\n  agentchat-load mcp-server [--port N]"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some(sub @ ("fake-upstream" | "mcp-server")) => {
            let mut port = 0u16;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--port" => {
                        port = it
                            .next()
                            .and_then(|v| v.parse().ok())
                            .unwrap_or_else(|| usage())
                    }
                    _ => usage(),
                }
            }
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime");
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let served = match sub {
                "mcp-server" => rt.block_on(mcp::serve(addr)),
                _ => rt.block_on(fake::serve(addr)),
            };
            match served {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("{sub}: {e:#}");
                    1
                }
            }
        }
        Some("run") => {
            let cfg = match bench::Config::from_args(&args[1..]) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{e:#}");
                    usage()
                }
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime");
            match rt.block_on(bench::run_guarded(cfg)) {
                Ok(true) => 0,
                Ok(false) => {
                    eprintln!("load kit: FAILED (see the report)");
                    1
                }
                Err(e) => {
                    eprintln!("load kit: FAILED: {e:#}");
                    1
                }
            }
        }
        _ => usage(),
    };
    std::process::exit(code)
}
