//! `write_file`: create or replace a text file in the calling user's workspace.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::files::WorkspaceStore;
use crate::tools::IntoToolError;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Path of the file, relative to the workspace, e.g. "notes/todo.md".
    /// Missing parent directories are created.
    #[schemars(length(min = 1, max = 1024))]
    pub path: String,
    /// The complete text content of the file (UTF-8).
    pub content: String,
    /// Replace the file if it already exists. Defaults to false.
    #[serde(default)]
    pub overwrite: bool,
}

/// Writes one text file to the user's workspace.
#[derive(Debug, Clone)]
pub struct WriteFile {
    store: Arc<WorkspaceStore>,
}

impl WriteFile {
    /// A tool writing files into `store`.
    pub fn new(store: Arc<WorkspaceStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Write a text file to the user's private workspace, creating parent \
         directories. Fails if the file exists unless overwrite is true. \
         Subject to the workspace quota."
    }

    fn parameters(&self) -> Value {
        args_schema::<WriteFileArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: WriteFileArgs = parse_args(args)?;
        let written = self
            .store
            .write(
                ctx.user_id,
                &args.path,
                args.content.into_bytes(),
                args.overwrite,
            )
            .await
            .map_err(|e| e.into_tool_error(&args.path, &self.store.quota()))?;
        Ok(json!({
            "path": written.path,
            "bytes_written": written.size,
            "replaced": written.replaced,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Quota;
    use crate::tools::builtin::test_support::{ctx, store, store_with};

    #[tokio::test]
    async fn writes_and_refuses_silent_overwrite() {
        let (_tmp, s) = store();
        let c = ctx();
        let tool = WriteFile::new(Arc::clone(&s));
        let v = tool
            .call(&c, json!({"path": "a/b.md", "content": "# hi\n"}))
            .await
            .unwrap();
        assert_eq!(
            v,
            json!({"path": "a/b.md", "bytes_written": 5, "replaced": false})
        );
        assert_eq!(s.read(c.user_id, "a/b.md").await.unwrap(), b"# hi\n");
        let err = tool
            .call(&c, json!({"path": "a/b.md", "content": "x"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("'a/b.md' already exists"), "{err}");
        let v = tool
            .call(
                &c,
                json!({"path": "a/b.md", "content": "", "overwrite": true}),
            )
            .await
            .unwrap();
        assert_eq!(v["replaced"], true);
        assert_eq!(s.read(c.user_id, "a/b.md").await.unwrap(), b"");
    }

    #[tokio::test]
    async fn hostile_paths_and_quota() {
        let (tmp, s) = store_with(Quota {
            max_bytes: 10,
            max_files: 10,
            max_file_bytes: 8,
        });
        let tool = WriteFile::new(s);
        let c = ctx();
        for bad in ["../../etc/passwd", "/etc/passwd", "a/../../b", "a\0b", "x/"] {
            let err = tool
                .call(&c, json!({"path": bad, "content": "x"}))
                .await
                .unwrap_err();
            assert_eq!(err.code(), "invalid_arguments", "{bad:?}: {err}");
            assert!(!err.to_string().contains(tmp.path().to_str().unwrap()));
        }
        let err = tool
            .call(&c, json!({"path": "big", "content": "123456789"}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::Failed("'big' is too large (limit 8 bytes per file)".into())
        );
        tool.call(&c, json!({"path": "a", "content": "12345678"}))
            .await
            .unwrap();
        let err = tool
            .call(&c, json!({"path": "b", "content": "123"}))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot write 'b': workspace quota exceeded"),
            "{err}"
        );
        let err = tool
            .call(&c, json!({"path": "b", "content": "1", "mode": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "invalid_arguments");
    }
}
