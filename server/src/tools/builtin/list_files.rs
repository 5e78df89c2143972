//! `list_files`: the files in the calling user's workspace.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::files::WorkspaceStore;
use crate::tools::IntoToolError;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// At most this many entries are returned.
const MAX_LISTED: usize = 200;

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Only list files whose path starts with this string, e.g. "reports/".
    #[schemars(length(max = 1024))]
    pub prefix: Option<String>,
}

/// Lists the user's workspace files.
#[derive(Debug, Clone)]
pub struct ListFiles {
    store: Arc<WorkspaceStore>,
}

impl ListFiles {
    /// A tool listing files of `store`.
    pub fn new(store: Arc<WorkspaceStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Tool for ListFiles {
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    fn name(&self) -> &str {
        "list_files"
    }

    fn description(&self) -> &str {
        "List the files in the user's private workspace (path, size in bytes, \
         modification time), optionally only those whose path starts with \
         `prefix`. Also reports workspace usage and limits."
    }

    fn parameters(&self) -> Value {
        args_schema::<ListFilesArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ListFilesArgs = parse_args(args)?;
        let quota = self.store.quota();
        let all = self
            .store
            .list(ctx.user_id)
            .await
            .map_err(|e| e.into_tool_error(".", &quota))?;
        let total_bytes: u64 = all.iter().map(|f| f.size).sum();
        let total_files = all.len();
        let prefix = args.prefix.unwrap_or_default();
        let matching: Vec<_> = all
            .into_iter()
            .filter(|f| f.path.starts_with(&prefix))
            .collect();
        let matched = matching.len();
        let files: Vec<_> = matching.into_iter().take(MAX_LISTED).collect();
        Ok(json!({
            "files": files,
            "matched": matched,
            "truncated": matched > MAX_LISTED,
            "usage": {
                "bytes": total_bytes,
                "files": total_files,
                "max_bytes": quota.max_bytes,
                "max_files": quota.max_files,
                "max_file_bytes": quota.max_file_bytes,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{ctx, store};

    #[tokio::test]
    async fn lists_with_prefix() {
        let (_tmp, s) = store();
        let c = ctx();
        for p in ["a.txt", "reports/q1.csv", "reports/q2.csv"] {
            s.write(c.user_id, p, b"12".to_vec(), false).await.unwrap();
        }
        let tool = ListFiles::new(Arc::clone(&s));
        let v = tool.call(&c, json!({})).await.unwrap();
        assert_eq!(v["matched"], 3);
        assert_eq!(v["usage"]["bytes"], 6);
        assert_eq!(v["files"][0]["path"], "a.txt");
        assert!(v["files"][0]["modified"].is_string());
        let v = tool.call(&c, json!({"prefix": "reports/"})).await.unwrap();
        assert_eq!(v["matched"], 2);
        assert_eq!(v["files"][1]["path"], "reports/q2.csv");
        assert_eq!(v["truncated"], false);
        // Another user's workspace is separate.
        let v = tool.call(&ctx(), json!({})).await.unwrap();
        assert_eq!(v["matched"], 0);
        assert!(tool.call(&c, json!({"prefx": "a"})).await.is_err());
    }

    #[tokio::test]
    async fn caps_listing() {
        let (_tmp, s) = store();
        let c = ctx();
        for i in 0..(MAX_LISTED + 5) {
            s.write(c.user_id, &format!("f{i:04}"), Vec::new(), false)
                .await
                .unwrap();
        }
        let v = ListFiles::new(s).call(&c, json!({})).await.unwrap();
        assert_eq!(v["files"].as_array().unwrap().len(), MAX_LISTED);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["matched"], MAX_LISTED + 5);
    }
}
