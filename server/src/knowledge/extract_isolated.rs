//! Extraction as the server runs it: PDFs and HTML in a limited child process (this same
//! binary, `extract-document`), so no document can take the server down; text kinds, which
//! are only checked byte by byte, in the server. A limit the child hits becomes the file's
//! error; the caller's `cancel` (the file was removed or replaced) kills the child.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use super::child::{child_args, Reply, NO_LIMITS};
use super::{extract_kind, ExtractError, ExtractLimits, Extracted, FileKind};
use crate::config::KnowledgeSettings;
use crate::sandbox::{run, Ending, ProcessLimits, Spawn};

/// The child's thread stack: far more than real documents need (the page tree and drawing
/// nesting are bounded before the parser runs), and an overflow only ends the child.
const STACK_BYTES: usize = 16 << 20;

/// How to start the extraction child.
#[derive(Debug, Clone)]
pub struct Extractor {
    /// The program; `None`: this process's own executable.
    program: Option<PathBuf>,
    process: ProcessLimits,
}

impl Extractor {
    pub fn from_settings(settings: &KnowledgeSettings) -> Extractor {
        Extractor {
            program: settings.extractor.as_ref().map(PathBuf::from),
            process: ProcessLimits {
                memory_bytes: settings.extract_memory_mb.saturating_mul(1 << 20),
                cpu_secs: settings.extract_cpu_secs,
                wall: Duration::from_secs(settings.extract_timeout_secs),
                stack_bytes: STACK_BYTES,
                // JSON doubles quotes and backslashes at worst (control characters are
                // gone after `normalize`).
                max_output_bytes: settings.max_text_bytes.saturating_mul(2) + (64 << 10),
            },
        }
    }

    fn program(&self) -> Result<PathBuf, String> {
        match &self.program {
            Some(path) => Ok(path.clone()),
            None => std::env::current_exe().map_err(|e| format!("this executable: {e}")),
        }
    }
}

/// The text of the file `name`; PDFs and HTML are read in a child under `extractor`'s
/// limits. `Err(Cancelled)` once `cancel` completes first.
pub async fn extract_isolated(
    name: &str,
    bytes: Vec<u8>,
    limits: &ExtractLimits,
    extractor: &Extractor,
    cancel: impl Future<Output = ()>,
) -> Result<Extracted, ExtractError> {
    let kind = FileKind::of(name)?;
    if !kind.is_parsed() {
        let limits = limits.clone();
        return tokio::task::spawn_blocking(move || extract_kind(kind, &bytes, &limits))
            .await
            .unwrap_or_else(|_| Err(ExtractError::Crashed("the text check stopped".into())));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ExtractError::Empty);
    }
    let program = extractor.program().map_err(unavailable)?;
    let spawn = Spawn {
        program: &program,
        args: child_args(kind, bytes.len(), limits, &extractor.process),
        stdin: bytes,
    };
    let ending = run(spawn, &extractor.process, cancel).await;
    let text = reply_of(ending, limits, &extractor.process)?;
    Ok(Extracted { kind, text })
}

/// The file's text or error, from how the child ended.
fn reply_of(
    ending: Ending,
    limits: &ExtractLimits,
    process: &ProcessLimits,
) -> Result<String, ExtractError> {
    match ending {
        Ending::Exited { code: 0, stdout } => match serde_json::from_slice(&stdout) {
            Ok(Reply::Text(text)) => Ok(text),
            Ok(Reply::Error(e)) => Err(e),
            Err(_) => Err(ExtractError::Crashed("it gave no answer".into())),
        },
        Ending::Exited { code, .. } if code == i32::from(NO_LIMITS) => {
            Err(unavailable("the child could not limit itself".into()))
        }
        Ending::Exited { code, .. } => Err(ExtractError::Crashed(format!("exit status {code}"))),
        Ending::OutputTooLarge => Err(ExtractError::TooLarge {
            size: process.max_output_bytes,
            limit: limits.max_text_bytes,
        }),
        Ending::WallTimeout => Err(ExtractError::Timeout {
            secs: process.wall.as_secs(),
        }),
        Ending::CpuLimit => Err(ExtractError::CpuLimit {
            secs: process.cpu_secs,
        }),
        Ending::Memory => Err(ExtractError::OutOfMemory {
            mb: process.memory_bytes >> 20,
        }),
        Ending::StackOverflow => Err(ExtractError::PdfTooComplex(
            "it is nested too deeply".into(),
        )),
        Ending::Crashed { signal } => {
            Err(ExtractError::Crashed(format!("ended by signal {signal}")))
        }
        Ending::Cancelled => Err(ExtractError::Cancelled),
        Ending::Unavailable(why) => Err(unavailable(why)),
    }
}

/// The reader cannot run at all: the operator's problem, said in the log; the file's
/// error stays short.
fn unavailable(why: String) -> ExtractError {
    tracing::error!(reason = %why, "the document extraction child could not run");
    ExtractError::Unavailable
}
