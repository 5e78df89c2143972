//! `read_file`: read a text file from the calling user's workspace, one page
//! at a time.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::files::{text_chunk, WorkspaceError, WorkspaceStore};
use crate::tools::IntoToolError;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// Default page size in bytes.
const DEFAULT_LIMIT: u64 = 8_000;
/// Largest page size in bytes (keeps results under the registry's 16 KiB
/// default output cap).
const MAX_LIMIT: u64 = 12_000;
/// Largest JSON-escaped size of a page's content; pages with many escaped
/// characters are shrunk to fit.
const MAX_ESCAPED_BYTES: usize = 14_000;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Path of the file, relative to the workspace, e.g. "notes/todo.md".
    #[schemars(length(min = 1, max = 1024))]
    pub path: String,
    /// Byte offset to start reading at (default 0). To continue a truncated
    /// read, pass the `next_offset` of the previous result.
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Maximum number of bytes to return (default 8000, at most 12000).
    /// Pages end at a line break when possible.
    #[schemars(range(min = 1, max = 12000))]
    pub limit: Option<u64>,
}

/// Reads a page of a text file from the user's workspace.
#[derive(Debug, Clone)]
pub struct ReadFile {
    store: Arc<WorkspaceStore>,
}

impl ReadFile {
    /// A tool reading files of `store`.
    pub fn new(store: Arc<WorkspaceStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a UTF-8 text file from the user's private workspace. Large files \
         are returned in pages: if `truncated` is true, call again with \
         `offset` set to `next_offset`. Also returns total_lines, total_bytes \
         and the 1-based start_line of the page."
    }

    fn parameters(&self) -> Value {
        args_schema::<ReadFileArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ReadFileArgs = parse_args(args)?;
        let quota = self.store.quota();
        let to_tool = |e: WorkspaceError| e.into_tool_error(&args.path, &quota);
        let bytes = self
            .store
            .read(ctx.user_id, &args.path)
            .await
            .map_err(to_tool)?;
        let text = String::from_utf8(bytes).map_err(|_| to_tool(WorkspaceError::NotText))?;
        let mut limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let offset = args.offset.unwrap_or(0);
        let mut chunk = text_chunk(&text, offset, limit);
        while limit > 1 && escaped_len(&chunk.content) > MAX_ESCAPED_BYTES {
            limit /= 2;
            chunk = text_chunk(&text, offset, limit);
        }
        Ok(json!({
            "path": args.path,
            "content": chunk.content,
            "offset": chunk.offset,
            "start_line": chunk.start_line,
            "total_lines": chunk.total_lines,
            "total_bytes": chunk.total_bytes,
            "truncated": chunk.truncated,
            "next_offset": chunk.next_offset,
        }))
    }
}

fn escaped_len(s: &str) -> usize {
    serde_json::to_string(s).map_or(usize::MAX, |j| j.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{ctx, store};
    use std::os::unix::fs::symlink;

    #[tokio::test]
    async fn reads_small_file() {
        let (_tmp, s) = store();
        let c = ctx();
        s.write(c.user_id, "a.txt", b"one\ntwo".to_vec(), false)
            .await
            .unwrap();
        let v = ReadFile::new(s)
            .call(&c, json!({"path": "a.txt"}))
            .await
            .unwrap();
        assert_eq!(
            v,
            json!({"path": "a.txt", "content": "one\ntwo", "offset": 0, "start_line": 1,
                   "total_lines": 2, "total_bytes": 7, "truncated": false, "next_offset": null})
        );
    }

    #[tokio::test]
    async fn pages_through_huge_file() {
        let (_tmp, s) = store();
        let c = ctx();
        let text: String = (0..50_000).map(|i| format!("line number {i}\n")).collect();
        s.write(c.user_id, "huge.log", text.clone().into_bytes(), false)
            .await
            .unwrap();
        let tool = ReadFile::new(s);
        let mut offset = json!(0);
        let mut rebuilt = String::new();
        let mut pages = 0;
        loop {
            let v = tool
                .call(
                    &c,
                    json!({"path": "huge.log", "offset": offset, "limit": 12000}),
                )
                .await
                .unwrap();
            assert!(v["content"].as_str().unwrap().len() <= 12_000);
            rebuilt.push_str(v["content"].as_str().unwrap());
            pages += 1;
            if v["truncated"] == false {
                assert_eq!(v["next_offset"], Value::Null);
                break;
            }
            offset = v["next_offset"].clone();
        }
        assert_eq!(rebuilt, text);
        assert!(pages > 50);
        // Past the end: empty page.
        let v = tool
            .call(&c, json!({"path": "huge.log", "offset": 10_000_000}))
            .await
            .unwrap();
        assert_eq!(v["content"], "");
        assert_eq!(v["total_lines"], 50_000);
    }

    #[tokio::test]
    async fn escape_heavy_content_is_shrunk() {
        let (_tmp, s) = store();
        let c = ctx();
        s.write(c.user_id, "ctl", vec![1u8; 12_000], false)
            .await
            .unwrap();
        let v = ReadFile::new(s)
            .call(&c, json!({"path": "ctl", "limit": 12000}))
            .await
            .unwrap();
        assert!(serde_json::to_string(&v["content"]).unwrap().len() <= MAX_ESCAPED_BYTES);
        assert_eq!(v["truncated"], true);
    }

    #[tokio::test]
    async fn errors() {
        let (tmp, s) = store();
        let c = ctx();
        s.write(c.user_id, "bin", vec![0xc3, 0x28, 0xff], false)
            .await
            .unwrap();
        let tool = ReadFile::new(Arc::clone(&s));
        let err = tool.call(&c, json!({"path": "bin"})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed("'bin' is not a text file".into()));
        let err = tool.call(&c, json!({"path": "nope"})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed("file not found: 'nope'".into()));
        for bad in ["../../etc/passwd", "/etc/passwd", "a/../../b", "a\0b"] {
            let err = tool.call(&c, json!({ "path": bad })).await.unwrap_err();
            assert_eq!(err.code(), "invalid_arguments", "{bad:?}: {err}");
        }
        // A planted symlink to /etc/passwd is not followed out of the jail.
        let user_dir = tmp.path().join("ws").join(c.user_id.to_string());
        symlink("/etc/passwd", user_dir.join("pw")).unwrap();
        let err = tool.call(&c, json!({"path": "pw"})).await.unwrap_err();
        assert_eq!(err.code(), "invalid_arguments", "{err}");
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
}
