//! The bounded CSV scan behind `csv_stats`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{json, Value};

use super::csv_stats::{CsvFilter, CsvOperation, FilterOp, FilterValue, MAX_GROUPS};
use crate::files::quote;
use crate::tools::ToolError;

/// At most this many column names are listed in an "unknown column" error.
const MAX_LISTED_COLUMNS: usize = 50;

/// Everything `scan` needs.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    /// Workspace path (for messages only).
    pub path: String,
    /// What to compute.
    pub operation: CsvOperation,
    /// Aggregated column.
    pub column: Option<String>,
    /// Grouping column.
    pub group_by: Option<String>,
    /// Row filter.
    pub filter: Option<CsvFilter>,
    /// Groups/values returned, already clamped.
    pub limit: Option<usize>,
    /// Stop after this many data rows (normally [`super::csv_stats::MAX_ROWS_SCANNED`]).
    pub max_rows: u64,
}

/// Per-group accumulator.
#[derive(Debug, Clone, Copy)]
struct Acc {
    rows: u64,
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Default for Acc {
    fn default() -> Self {
        Self {
            rows: 0,
            n: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Acc {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    fn value(&self, op: CsvOperation) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        Some(match op {
            CsvOperation::Sum => self.sum,
            CsvOperation::Mean => self.sum / self.n as f64,
            CsvOperation::Min => self.min,
            CsvOperation::Max => self.max,
            _ => self.n as f64,
        })
    }
}

/// A finite number parsed from a trimmed cell.
pub(crate) fn parse_number(cell: &str) -> Option<f64> {
    cell.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

fn compare(cell: &str, op: FilterOp, value: &FilterValue) -> bool {
    let cell = cell.trim();
    if op == FilterOp::Contains {
        let needle = match value {
            FilterValue::Number(n) => n.to_string(),
            FilterValue::Text(s) => s.to_lowercase(),
        };
        return cell.to_lowercase().contains(&needle);
    }
    let ordering = match value {
        FilterValue::Number(v) => match parse_number(cell) {
            Some(x) => x.partial_cmp(v),
            None => return op == FilterOp::Ne,
        },
        FilterValue::Text(s) => match (op, parse_number(cell), parse_number(s)) {
            (FilterOp::Eq | FilterOp::Ne, _, _) => Some(cell.cmp(s.as_str())),
            (_, Some(x), Some(v)) => x.partial_cmp(&v),
            // A numeric bound never matches a non-numeric (or empty) cell.
            (_, None, Some(_)) => return false,
            _ => Some(cell.cmp(s.as_str())),
        },
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match op {
        FilterOp::Eq => ordering == Ordering::Equal,
        FilterOp::Ne => ordering != Ordering::Equal,
        FilterOp::Lt => ordering == Ordering::Less,
        FilterOp::Le => ordering != Ordering::Greater,
        FilterOp::Gt => ordering == Ordering::Greater,
        FilterOp::Ge => ordering != Ordering::Less,
        FilterOp::Contains => false,
    }
}

/// Index of `name` among `headers`: exact match first, then a unique
/// case-insensitive, whitespace-trimmed match.
fn find_column(headers: &[String], name: &str, arg: &str) -> Result<usize, ToolError> {
    if let Some(i) = headers.iter().position(|h| h == name) {
        return Ok(i);
    }
    let wanted = name.trim().to_lowercase();
    let loose: Vec<usize> = (0..headers.len())
        .filter(|&i| headers[i].trim().to_lowercase() == wanted)
        .collect();
    if let [i] = loose[..] {
        return Ok(i);
    }
    let mut listed: Vec<String> = headers
        .iter()
        .take(MAX_LISTED_COLUMNS)
        .map(|h| quote(h))
        .collect();
    if headers.len() > MAX_LISTED_COLUMNS {
        listed.push(format!("… ({} columns in total)", headers.len()));
    }
    Err(ToolError::InvalidArguments(format!(
        "{arg}: column {} not found; available columns: {}",
        quote(name),
        listed.join(", ")
    )))
}

fn cell<'a>(record: &'a csv::ByteRecord, index: usize) -> Cow<'a, str> {
    String::from_utf8_lossy(record.get(index).unwrap_or_default())
}

/// Run the request over the CSV `bytes`.
pub fn scan(bytes: &[u8], req: &ScanRequest) -> Result<Value, ToolError> {
    let op = req.operation;
    let shown = quote(&req.path);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(bytes);
    let headers: Vec<String> = reader
        .byte_headers()
        .map_err(|e| ToolError::Failed(format!("{shown} is not valid CSV: {e}")))?
        .iter()
        .map(|h| {
            String::from_utf8_lossy(h)
                .trim_start_matches('\u{feff}')
                .to_owned()
        })
        .collect();
    if headers.is_empty() || headers.iter().all(|h| h.trim().is_empty()) {
        return Err(ToolError::Failed(format!(
            "{shown} has no header row (the first row must name the columns)"
        )));
    }

    let needs_column = matches!(op, CsvOperation::Distinct) || op.is_numeric();
    let column = match (&req.column, op) {
        (Some(c), _) => Some(find_column(&headers, c, "column")?),
        (None, CsvOperation::GroupCount) if req.group_by.is_some() => None,
        (None, _) if needs_column || op == CsvOperation::GroupCount => {
            return Err(ToolError::InvalidArguments(format!(
                "column: required for operation '{}'",
                op.as_str()
            )))
        }
        (None, _) => None,
    };
    let group = match &req.group_by {
        Some(g) => Some(find_column(&headers, g, "group_by")?),
        None if op == CsvOperation::GroupCount => column,
        None => None,
    };
    // For `distinct` the key is the column; for `group_count` the group.
    let key_index = match op {
        CsvOperation::Distinct => column,
        _ => group,
    };
    let filter = match &req.filter {
        Some(f) => Some((find_column(&headers, &f.column, "filter.column")?, f)),
        None => None,
    };

    let mut groups: HashMap<String, Acc> = HashMap::new();
    let mut total = Acc::default();
    let (mut rows_scanned, mut rows_matched, mut ragged_rows) = (0u64, 0u64, 0u64);
    let (mut empty_skipped, mut non_numeric_skipped, mut dropped_rows) = (0u64, 0u64, 0u64);
    let mut row_limit_reached = false;
    let mut record = csv::ByteRecord::new();
    loop {
        if rows_scanned >= req.max_rows {
            row_limit_reached = matches!(reader.read_byte_record(&mut record), Ok(true));
            break;
        }
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                return Err(ToolError::Failed(format!(
                    "{shown} is not valid CSV (after {rows_scanned} data rows): {e}"
                )))
            }
        }
        rows_scanned += 1;
        if record.len() != headers.len() {
            ragged_rows += 1;
        }
        if let Some((fi, f)) = filter {
            if !compare(&cell(&record, fi), f.op, &f.value) {
                continue;
            }
        }
        rows_matched += 1;
        let acc = match key_index {
            Some(k) => {
                let key = cell(&record, k);
                if let Some(acc) = groups.get_mut(key.as_ref()) {
                    acc
                } else if groups.len() < MAX_GROUPS {
                    groups.entry(key.into_owned()).or_default()
                } else {
                    dropped_rows += 1;
                    continue;
                }
            }
            None => &mut total,
        };
        acc.rows += 1;
        if let Some(c) = column {
            let text = cell(&record, c);
            if text.trim().is_empty() {
                empty_skipped += 1;
            } else if op.is_numeric() {
                match parse_number(&text) {
                    Some(x) => acc.add(x),
                    None => non_numeric_skipped += 1,
                }
            } else {
                acc.n += 1;
            }
        }
    }

    let limit = req.limit;
    let groups_total = groups.len();
    let mut out = json!({
        "operation": op.as_str(),
        "column": column.map(|c| headers[c].clone()),
        "group_by": group.map(|g| headers[g].clone()),
        "rows_scanned": rows_scanned,
        "rows_matched": rows_matched,
        "row_limit_reached": row_limit_reached,
    });
    let extra = match (op, key_index) {
        (CsvOperation::Distinct, _) => {
            let mut values: Vec<&String> = groups.keys().collect();
            values.sort();
            values.truncate(limit.unwrap_or(50));
            json!({
                "result": groups_total,
                "values": values,
                "truncated": dropped_rows > 0 || groups_total > values.len(),
                "distinct_limit_reached": dropped_rows > 0,
            })
        }
        (_, Some(_)) if !op.is_numeric() => {
            let mut rows: Vec<(&String, &Acc)> = groups.iter().collect();
            rows.sort_by(|a, b| b.1.rows.cmp(&a.1.rows).then_with(|| a.0.cmp(b.0)));
            rows.truncate(limit.unwrap_or(20));
            let result: Vec<Value> = rows
                .iter()
                .map(|(k, a)| json!({"value": k, "count": a.rows}))
                .collect();
            json!({
                "result": result,
                "groups_total": groups_total,
                "truncated": dropped_rows > 0 || groups_total > result.len(),
                "rows_in_dropped_groups": dropped_rows,
            })
        }
        (CsvOperation::Count, None) => json!({
            "result": if column.is_some() { total.n } else { rows_matched },
        }),
        (_, Some(_)) => {
            let mut rows: Vec<(&String, f64, u64)> = groups
                .iter()
                .filter_map(|(k, a)| a.value(op).map(|v| (k, v, a.n)))
                .collect();
            rows.sort_by(|a, b| {
                let ord = a.1.total_cmp(&b.1);
                let ord = if op == CsvOperation::Min {
                    ord
                } else {
                    ord.reverse()
                };
                ord.then_with(|| a.0.cmp(b.0))
            });
            rows.truncate(limit.unwrap_or(20));
            let result: Vec<Value> = rows
                .iter()
                .map(|(k, v, n)| json!({"group": k, "value": v, "count": n}))
                .collect();
            json!({
                "result": result,
                "groups_total": groups_total,
                "truncated": dropped_rows > 0 || groups_total > result.len(),
                "rows_in_dropped_groups": dropped_rows,
                "empty_skipped": empty_skipped,
                "non_numeric_skipped": non_numeric_skipped,
            })
        }
        (_, None) => json!({
            "result": total.value(op),
            "count": total.n,
            "empty_skipped": empty_skipped,
            "non_numeric_skipped": non_numeric_skipped,
        }),
    };
    if let (Some(obj), Value::Object(extra)) = (out.as_object_mut(), extra) {
        obj.extend(extra);
        if ragged_rows > 0 {
            obj.insert("ragged_rows".to_owned(), json!(ragged_rows));
        }
    }
    Ok(out)
}
