//! Files in and out of a run. Inputs are read from the user's workspace through the store
//! (so `..`, absolute paths and symlinks out of the workspace are refused there, as for every
//! workspace access) and copied into the job; what the code left under `/mnt/data/outputs`
//! is saved to `outputs/<conversation>/…` in the same workspace, under its quota.

use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::files::{WorkspaceError, WorkspacePath, WorkspaceStore};
use crate::sandbox::{InputFile, OutputFile};
use crate::tools::{IntoToolError, ToolError};

/// Rows of a CSV shown to the model (the header among them).
const PREVIEW_LINES: usize = 6;
/// Characters of a CSV preview at most.
const PREVIEW_CHARS: usize = 1500;

/// A file as the audit row keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct Hashed {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<&'static str>,
}

/// A saved output, as the model and the chat see it.
#[derive(Debug, Clone, Serialize)]
pub struct SavedFile {
    /// Its path in the user's workspace (the file route serves it).
    pub path: String,
    pub mime: &'static str,
    pub bytes: u64,
    /// The first rows of a CSV.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// Where a workspace file is in the jail: `/mnt/data/<its path>`, except that an earlier
/// run's output (`outputs/…`) is at `/mnt/data/previous/…`, since `/mnt/data/outputs` is
/// where this run's outputs go.
pub fn jail_name(workspace_path: &str) -> String {
    match workspace_path.strip_prefix("outputs/") {
        Some(rest) => format!("previous/{rest}"),
        None => workspace_path.to_owned(),
    }
}

/// The workspace files named in `inputs`, read for `user`, at most `max_total` bytes
/// together; each becomes `/mnt/data/<its jail name>` (see [`jail_name`]).
pub async fn load_inputs(
    store: &WorkspaceStore,
    user: Uuid,
    inputs: &[String],
    max_total: u64,
) -> Result<(Vec<InputFile>, Vec<Hashed>), ToolError> {
    let mut files = Vec::with_capacity(inputs.len());
    let mut hashed = Vec::with_capacity(inputs.len());
    let mut total = 0u64;
    for raw in inputs {
        let path = WorkspacePath::parse(raw)
            .map_err(|m| ToolError::InvalidArguments(format!("inputs: {m}")))?;
        let name = jail_name(path.as_str());
        if files.iter().any(|f: &InputFile| f.name == name) {
            continue;
        }
        let bytes = store
            .read(user, path.as_str())
            .await
            .map_err(|e| e.into_tool_error(raw, &store.quota()))?;
        total += bytes.len() as u64;
        if total > max_total {
            return Err(ToolError::Failed(format!(
                "the inputs are larger than the sandbox's data space ({max_total} bytes)"
            )));
        }
        hashed.push(Hashed {
            path: path.as_str().to_owned(),
            bytes: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
            mime: None,
        });
        files.push(InputFile { name, bytes });
    }
    Ok((files, hashed))
}

/// What became of the outputs: saved files, and the ones not saved with why.
pub struct Saved {
    pub files: Vec<SavedFile>,
    pub hashed: Vec<Hashed>,
    pub skipped: Vec<String>,
}

/// Saves each output under `outputs/<conversation>/` in `user`'s workspace (replacing a file
/// of an earlier run of the same chat); a write the quota refuses is skipped and said.
pub async fn save_outputs(
    store: &WorkspaceStore,
    user: Uuid,
    conversation: Uuid,
    outputs: Vec<OutputFile>,
) -> Saved {
    let mut saved = Saved {
        files: Vec::new(),
        hashed: Vec::new(),
        skipped: Vec::new(),
    };
    let prefix = format!("outputs/{conversation}");
    for out in outputs {
        let target = format!("{prefix}/{}", out.path);
        let sha = sha256_hex(&out.bytes);
        let bytes = out.bytes.len() as u64;
        let mime = mime_of(&out.path);
        let preview = (mime == "text/csv").then(|| csv_preview(&out.bytes));
        match store.write(user, &target, out.bytes, true).await {
            Ok(written) => {
                saved.hashed.push(Hashed {
                    path: written.path.clone(),
                    bytes,
                    sha256: sha,
                    mime: Some(mime),
                });
                saved.files.push(SavedFile {
                    path: written.path,
                    mime,
                    bytes,
                    preview,
                });
            }
            Err(e) => saved
                .skipped
                .push(format!("{}: {}", out.path, why_not_saved(e))),
        }
    }
    saved
}

fn why_not_saved(e: WorkspaceError) -> String {
    match e {
        WorkspaceError::QuotaExceeded(m) => format!("not saved, workspace quota exceeded ({m})"),
        WorkspaceError::TooLarge => "not saved, larger than the workspace's per-file limit".into(),
        WorkspaceError::InvalidPath(m) => format!("not saved, not a valid workspace path ({m})"),
        WorkspaceError::AlreadyExists => "not saved, a directory is in the way".into(),
        other => format!("not saved ({other})"),
    }
}

/// The type of an output, by its name (the chat shows PNG and JPEG inline, the rest as
/// downloads).
pub fn mime_of(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "pdf" => "application/pdf",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "parquet" => "application/vnd.apache.parquet",
        _ => "application/octet-stream",
    }
}

/// The first lines of a CSV, cut at [`PREVIEW_CHARS`].
fn csv_preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes.get(..64 * 1024).unwrap_or(bytes));
    let head: Vec<&str> = text.lines().take(PREVIEW_LINES).collect();
    crate::tools::truncate_chars(&head.join("\n"), PREVIEW_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_previews() {
        assert_eq!(mime_of("chart.PNG"), "image/png");
        assert_eq!(mime_of("a/b.jpeg"), "image/jpeg");
        assert_eq!(mime_of("page.html"), "text/html");
        assert_eq!(mime_of("noext"), "application/octet-stream");
        let csv = b"code,n\n504,9\n500,3\n404,2\n403,1\n401,1\n400,1\n";
        assert_eq!(
            csv_preview(csv),
            "code,n\n504,9\n500,3\n404,2\n403,1\n401,1"
        );
        assert_eq!(sha256_hex(b"").len(), 64);
        assert_eq!(jail_name("logs/a.csv"), "logs/a.csv");
        assert_eq!(jail_name("outputs/c1/report.csv"), "previous/c1/report.csv");
    }
}
