//! A file store's failure as the model reads it: the file tools' errors name the path.

use super::ToolError;
use crate::files::{quote, Quota, WorkspaceError};

/// Turns a [`WorkspaceError`] into the tool error of an operation on a path.
pub trait IntoToolError {
    /// The tool-facing error for an operation on `path`: bad paths become
    /// [`ToolError::InvalidArguments`], everything else [`ToolError::Failed`],
    /// with a message naming the path.
    fn into_tool_error(self, path: &str, quota: &Quota) -> ToolError;
}

impl IntoToolError for WorkspaceError {
    fn into_tool_error(self, path: &str, quota: &Quota) -> ToolError {
        let p = quote(path);
        match self {
            WorkspaceError::InvalidPath(m) => ToolError::InvalidArguments(format!("path: {m}")),
            WorkspaceError::NotFound => ToolError::Failed(format!("file not found: {p}")),
            WorkspaceError::AlreadyExists => ToolError::Failed(format!(
                "{p} already exists; set overwrite to true to replace it"
            )),
            WorkspaceError::QuotaExceeded(m) => {
                ToolError::Failed(format!("cannot write {p}: workspace quota exceeded: {m}"))
            }
            WorkspaceError::TooLarge => ToolError::Failed(format!(
                "{p} is too large (limit {} bytes per file)",
                quota.max_file_bytes
            )),
            WorkspaceError::NotText => ToolError::Failed(format!("{p} is not a text file")),
            WorkspaceError::UploadCancelled => {
                ToolError::Failed(format!("{p} was deleted while it was being written"))
            }
            WorkspaceError::Io(e) => {
                tracing::warn!(error = %e, path, "workspace i/o error");
                ToolError::Failed(format!("storage error while accessing {p}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota() -> Quota {
        Quota {
            max_bytes: 1000,
            max_files: 5,
            max_file_bytes: 400,
        }
    }

    #[test]
    fn tool_error_mapping_names_path() {
        let q = quota();
        let e = WorkspaceError::NotFound.into_tool_error("x.txt", &q);
        assert_eq!(e, ToolError::Failed("file not found: 'x.txt'".into()));
        let e = WorkspaceError::InvalidPath("bad".into()).into_tool_error("x", &q);
        assert_eq!(e, ToolError::InvalidArguments("path: bad".into()));
        let e = WorkspaceError::TooLarge.into_tool_error("x", &q);
        assert!(e.to_string().contains("limit 400 bytes"));
        let e =
            WorkspaceError::Io(std::io::Error::other("/srv/secret/root")).into_tool_error("x", &q);
        assert_eq!(
            e,
            ToolError::Failed("storage error while accessing 'x'".into())
        );
    }
}
