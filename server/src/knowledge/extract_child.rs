//! `agentchat extract-document`: the child process PDFs and HTML are read in. It puts its
//! limits on itself first and restarts under them (`sandbox::ChildLimits::enter`), reads the document on standard input,
//! extracts it on a thread with a bounded stack, and writes one JSON `Reply` on standard
//! output. Whatever a document does to the parser (overflow the stack, exhaust memory,
//! loop), it does it to this child, which the server then reports as the file's error.

use std::io::{Read, Write};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use super::{extract_kind, ExtractError, ExtractLimits, FileKind};
use crate::sandbox::{ChildLimits, ProcessLimits};

/// Exit code when the limits could not be applied: nothing was read.
pub const NO_LIMITS: u8 = 3;

/// The child's command line (built by `child_args`).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ExtractArgs {
    /// `pdf` or `html` (any `FileKind`).
    #[arg(long)]
    pub kind: String,
    #[arg(long)]
    pub max_input_bytes: usize,
    #[arg(long)]
    pub max_text_bytes: usize,
    #[arg(long)]
    pub max_pdf_pages: usize,
    #[arg(long)]
    pub max_pdf_stream_bytes: usize,
    #[arg(long)]
    pub max_pdf_operators: u64,
    #[arg(long)]
    pub max_pdf_tree_depth: usize,
    #[command(flatten)]
    pub limits: ChildLimits,
}

/// What the child answers on standard output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Text(String),
    Error(ExtractError),
}

/// The arguments that make the child extract a `kind` file of `input_len` bytes.
pub fn child_args(
    kind: FileKind,
    input_len: usize,
    limits: &ExtractLimits,
    process: &ProcessLimits,
) -> Vec<String> {
    let mut args = vec![
        "extract-document".to_owned(),
        "--kind".into(),
        kind.as_str().into(),
        "--max-input-bytes".into(),
        input_len.to_string(),
        "--max-text-bytes".into(),
        limits.max_text_bytes.to_string(),
        "--max-pdf-pages".into(),
        limits.max_pdf_pages.to_string(),
        "--max-pdf-stream-bytes".into(),
        limits.max_pdf_stream_bytes.to_string(),
        "--max-pdf-operators".into(),
        limits.max_pdf_operators.to_string(),
        "--max-pdf-tree-depth".into(),
        limits.max_pdf_tree_depth.to_string(),
    ];
    args.extend(process.child_args());
    args
}

/// The child's whole life; the exit code is 0 whenever a `Reply` was written.
pub fn main(args: ExtractArgs) -> ExitCode {
    if let Err(e) = args.limits.enter() {
        eprintln!("extract-document: {e}");
        return ExitCode::from(NO_LIMITS);
    }
    let reply = answer(&args);
    let written = serde_json::to_vec(&reply)
        .map_err(|e| e.to_string())
        .and_then(|json| {
            let mut out = std::io::stdout().lock();
            out.write_all(&json)
                .and_then(|()| out.flush())
                .map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("extract-document: writing the answer: {e}");
            ExitCode::FAILURE
        }
    }
}

fn answer(args: &ExtractArgs) -> Reply {
    let Some(kind) = FileKind::parse(&args.kind) else {
        return Reply::Error(ExtractError::Unsupported(args.kind.clone()));
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(args.max_input_bytes).unwrap_or(u64::MAX);
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut bytes) {
        return Reply::Error(ExtractError::Crashed(format!("reading the file: {e}")));
    }
    let limits = ExtractLimits {
        max_text_bytes: args.max_text_bytes,
        max_pdf_pages: args.max_pdf_pages,
        max_pdf_stream_bytes: args.max_pdf_stream_bytes,
        max_pdf_operators: args.max_pdf_operators,
        max_pdf_tree_depth: args.max_pdf_tree_depth,
    };
    let done = args
        .limits
        .on_bounded_stack(move || extract_kind(kind, &bytes, &limits));
    match done {
        Ok(Ok(extracted)) => Reply::Text(extracted.text),
        Ok(Err(e)) => Reply::Error(e),
        Err(why) => {
            eprintln!("extract-document: {why}");
            Reply::Error(ExtractError::Crashed("the reader stopped".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_child_reads_back_the_arguments_the_server_gives_it() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(subcommand)]
            command: Sub,
        }
        #[derive(clap::Subcommand)]
        enum Sub {
            ExtractDocument(ExtractArgs),
        }
        let limits = ExtractLimits::default();
        let process = ProcessLimits {
            memory_bytes: 1 << 30,
            cpu_secs: 7,
            wall: Duration::from_secs(9),
            stack_bytes: 1 << 24,
            max_output_bytes: 100,
        };
        let args = child_args(FileKind::Pdf, 1234, &limits, &process);
        let cli = <Cli as clap::Parser>::try_parse_from(
            std::iter::once("agentchat".to_owned()).chain(args),
        )
        .unwrap();
        let Sub::ExtractDocument(parsed) = cli.command;
        assert_eq!(
            parsed,
            ExtractArgs {
                kind: "pdf".into(),
                max_input_bytes: 1234,
                max_text_bytes: limits.max_text_bytes,
                max_pdf_pages: limits.max_pdf_pages,
                max_pdf_stream_bytes: limits.max_pdf_stream_bytes,
                max_pdf_operators: limits.max_pdf_operators,
                max_pdf_tree_depth: limits.max_pdf_tree_depth,
                limits: ChildLimits {
                    memory_bytes: 1 << 30,
                    cpu_secs: 7,
                    stack_bytes: 1 << 24,
                    limited: false,
                },
            }
        );
    }

    #[test]
    fn replies_round_trip_as_json() {
        for reply in [
            Reply::Text("text".into()),
            Reply::Error(ExtractError::PdfTooComplex("deep".into())),
            Reply::Error(ExtractError::TooLarge { size: 9, limit: 8 }),
        ] {
            let json = serde_json::to_string(&reply).unwrap();
            assert_eq!(serde_json::from_str::<Reply>(&json).unwrap(), reply);
        }
    }
}
