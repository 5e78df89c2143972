//! Built-in tools. Adding one = a new file here + one line in [`all`].

pub mod calculator;
pub mod csv_scan;
pub mod csv_stats;
pub mod current_time;
pub mod delete_file;
pub mod http_get;
pub mod list_files;
pub mod read_file;
pub mod write_file;

#[cfg(test)]
mod schema_size_tests;
#[cfg(test)]
mod test_support;

use std::sync::Arc;

use super::net::HttpToolConfig;
use super::Tool;
use crate::files::WorkspaceStore;

pub use calculator::Calculator;
pub use csv_stats::CsvStats;
pub use current_time::CurrentTime;
pub use delete_file::DeleteFile;
pub use http_get::HttpGet;
pub use list_files::ListFiles;
pub use read_file::ReadFile;
pub use write_file::WriteFile;

/// What the built-in tools need from the server.
#[derive(Debug, Clone)]
pub struct BuiltinConfig {
    /// Per-user file workspaces (file tools and `csv_stats`).
    pub workspace: Arc<WorkspaceStore>,
    /// Limits and allowlists of `http_get`.
    pub http: HttpToolConfig,
    /// Per-user site rules of `http_get` (the roles' web search domain lists).
    pub fetch_rules: Option<Arc<dyn http_get::FetchRules>>,
}

/// Every built-in tool, ready for [`super::Registry::register`].
pub fn all(config: &BuiltinConfig) -> Vec<Arc<dyn Tool>> {
    let ws = &config.workspace;
    vec![
        Arc::new(CurrentTime::new()),
        Arc::new(Calculator),
        Arc::new(ListFiles::new(Arc::clone(ws))),
        Arc::new(ReadFile::new(Arc::clone(ws))),
        Arc::new(WriteFile::new(Arc::clone(ws))),
        Arc::new(DeleteFile::new(Arc::clone(ws))),
        Arc::new(CsvStats::new(Arc::clone(ws))),
        Arc::new(HttpGet::new(&config.http).with_rules(config.fetch_rules.clone())),
    ]
}
