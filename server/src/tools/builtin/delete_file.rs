//! `delete_file`: delete a file from the calling user's workspace.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::files::WorkspaceStore;
use crate::tools::IntoToolError;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileArgs {
    /// Path of the file, relative to the workspace, e.g. "notes/todo.md".
    #[schemars(length(min = 1, max = 1024))]
    pub path: String,
}

/// Deletes one file of the user's workspace.
#[derive(Debug, Clone)]
pub struct DeleteFile {
    store: Arc<WorkspaceStore>,
}

impl DeleteFile {
    /// A tool deleting files of `store`.
    pub fn new(store: Arc<WorkspaceStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Tool for DeleteFile {
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    fn name(&self) -> &str {
        "delete_file"
    }

    fn description(&self) -> &str {
        "Delete a file from the user's private workspace. Directories left \
         empty are removed automatically. This cannot be undone."
    }

    fn parameters(&self) -> Value {
        args_schema::<DeleteFileArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: DeleteFileArgs = parse_args(args)?;
        self.store
            .delete(ctx.user_id, &args.path)
            .await
            .map_err(|e| e.into_tool_error(&args.path, &self.store.quota()))?;
        Ok(json!({ "path": args.path, "deleted": true }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{ctx, store};

    #[tokio::test]
    async fn deletes_and_reports_missing() {
        let (_tmp, s) = store();
        let c = ctx();
        s.write(c.user_id, "x/y.txt", b"1".to_vec(), false)
            .await
            .unwrap();
        let tool = DeleteFile::new(Arc::clone(&s));
        let v = tool.call(&c, json!({"path": "x/y.txt"})).await.unwrap();
        assert_eq!(v, json!({"path": "x/y.txt", "deleted": true}));
        assert!(s.list(c.user_id).await.unwrap().is_empty());
        let err = tool.call(&c, json!({"path": "x/y.txt"})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed("file not found: 'x/y.txt'".into()));
    }

    #[tokio::test]
    async fn hostile_paths() {
        let (_tmp, s) = store();
        let tool = DeleteFile::new(s);
        for bad in ["../../etc/passwd", "/etc/passwd", "a/../../b", "a\0b"] {
            let err = tool.call(&ctx(), json!({ "path": bad })).await.unwrap_err();
            assert_eq!(err.code(), "invalid_arguments", "{bad:?}: {err}");
            assert!(err.to_string().starts_with("invalid arguments: path: "));
        }
    }
}
