//! `csv_stats`: simple aggregate statistics over a CSV file in the calling
//! user's workspace (count, distinct, group_count, sum, mean, min, max), with
//! an optional row filter and grouping. Work is bounded: file size, rows
//! scanned and groups kept are capped. The scan itself lives in
//! [`super::csv_scan`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::csv_scan::{scan, ScanRequest};
use crate::files::WorkspaceStore;
use crate::tools::IntoToolError;
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// Largest CSV file analysed, in bytes (the workspace per-file limit applies too).
pub const MAX_CSV_BYTES: u64 = 64 * 1024 * 1024;
/// At most this many data rows are scanned; the result says if it stopped early.
pub const MAX_ROWS_SCANNED: u64 = 1_000_000;
/// At most this many distinct values/groups are kept.
pub const MAX_GROUPS: usize = 10_000;
/// Largest `limit`.
pub const MAX_LIMIT: u32 = 1000;

/// What to compute (variant comments stay out of the schema the model is sent: the
/// tool description names the operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CsvOperation {
    // Number of matching rows (or of non-empty `column` cells).
    Count,
    // Number of distinct values of `column`, plus the first `limit` values.
    Distinct,
    // Rows per value of `group_by` (or `column`), most frequent first.
    GroupCount,
    // Sum of the numeric cells of `column`.
    Sum,
    // Mean of the numeric cells of `column`.
    Mean,
    // Minimum of the numeric cells of `column`.
    Min,
    // Maximum of the numeric cells of `column`.
    Max,
}

impl CsvOperation {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CsvOperation::Count => "count",
            CsvOperation::Distinct => "distinct",
            CsvOperation::GroupCount => "group_count",
            CsvOperation::Sum => "sum",
            CsvOperation::Mean => "mean",
            CsvOperation::Min => "min",
            CsvOperation::Max => "max",
        }
    }

    /// Whether the operation aggregates numbers.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            CsvOperation::Sum | CsvOperation::Mean | CsvOperation::Min | CsvOperation::Max
        )
    }
}

/// Comparison used by a [`CsvFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FilterOp {
    // Equal (numerically if both sides are numbers, else exact text).
    Eq,
    // Not equal.
    Ne,
    // Less than (numeric if both sides are numbers, else text order).
    Lt,
    // Less than or equal.
    Le,
    // Greater than.
    Gt,
    // Greater than or equal.
    Ge,
    // Cell contains the value as a substring (case-insensitive).
    Contains,
}

/// The right-hand side of a filter.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FilterValue {
    // A number.
    Number(f64),
    // A string.
    Text(String),
}

/// Keep only rows where `column` `op` `value`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsvFilter {
    /// Column to test.
    pub column: String,
    /// Comparison.
    pub op: FilterOp,
    /// Value to compare with.
    pub value: FilterValue,
}

/// Arguments of `csv_stats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsvStatsArgs {
    /// Path of the CSV file in the workspace. The first row must be the header.
    #[schemars(length(min = 1, max = 1024))]
    pub path: String,
    /// The statistic to compute.
    pub operation: CsvOperation,
    /// Column to aggregate (required for distinct, sum, mean, min, max).
    pub column: Option<String>,
    /// Group rows by this column; numeric operations then return one value per group.
    pub group_by: Option<String>,
    /// Only consider rows matching this condition.
    pub filter: Option<CsvFilter>,
    /// Maximum number of groups/values returned (default 20 for groups,
    /// 50 for distinct values).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

/// Computes statistics over a workspace CSV file.
#[derive(Debug, Clone)]
pub struct CsvStats {
    store: Arc<WorkspaceStore>,
}

impl CsvStats {
    /// A tool reading CSV files of `store`.
    pub fn new(store: Arc<WorkspaceStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Tool for CsvStats {
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Files)
    }

    fn name(&self) -> &str {
        "csv_stats"
    }

    fn description(&self) -> &str {
        "Statistics over a CSV file with a header row in the user's workspace: \
         count, distinct, group_count, sum, mean, min or max of a column, \
         optionally grouped by another column and filtered. Numeric operations \
         skip non-numeric cells and say how many."
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    fn parameters(&self) -> Value {
        args_schema::<CsvStatsArgs>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: CsvStatsArgs = parse_args(args)?;
        let quota = self.store.quota();
        let bytes = self
            .store
            .read_capped(ctx.user_id, &args.path, MAX_CSV_BYTES)
            .await
            .map_err(|e| e.into_tool_error(&args.path, &quota))?;
        let request = ScanRequest {
            path: args.path,
            operation: args.operation,
            column: args.column,
            group_by: args.group_by,
            filter: args.filter,
            limit: args.limit.map(|l| l.clamp(1, MAX_LIMIT) as usize),
            max_rows: MAX_ROWS_SCANNED,
        };
        tokio::task::spawn_blocking(move || scan(&bytes, &request))
            .await
            .map_err(|_| ToolError::Failed("the CSV scan was aborted".to_owned()))?
    }
}

#[cfg(test)]
#[path = "csv_stats_tests.rs"]
mod tests;
