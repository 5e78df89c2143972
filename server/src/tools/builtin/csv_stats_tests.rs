//! Tests for `csv_stats`.

use super::*;
use crate::tools::builtin::csv_scan::{scan, ScanRequest};
use crate::tools::builtin::test_support::{ctx, store};
use crate::tools::ToolContext;
use serde_json::json;

const SALES: &str = "region,product,amount,note\n\
north,apple,10,\n\
south,apple,5.5,\"quoted, with comma\"\n\
north,pear,n/a,x\n\
east,apple,,\n\
north,plum,2,\"multi\nline\"\n\
south,pear,-1,y\n";

async fn setup(content: &[u8]) -> (tempfile::TempDir, CsvStats, ToolContext) {
    let (tmp, s) = store();
    let c = ctx();
    s.write(c.user_id, "data/sales.csv", content.to_vec(), false)
        .await
        .unwrap();
    (tmp, CsvStats::new(s), c)
}

async fn run(args: Value) -> Result<Value, ToolError> {
    let (_tmp, tool, c) = setup(SALES.as_bytes()).await;
    let mut args = args;
    args["path"] = json!("data/sales.csv");
    tool.call(&c, args).await
}

#[tokio::test]
async fn count_and_filters() {
    let v = run(json!({"operation": "count"})).await.unwrap();
    assert_eq!(v["result"], 6);
    assert_eq!(v["rows_scanned"], 6);
    assert_eq!(v["rows_matched"], 6);
    let v = run(json!({"operation": "count", "column": "amount"}))
        .await
        .unwrap();
    assert_eq!(v["result"], 5, "non-empty cells");
    let v = run(json!({"operation": "count",
        "filter": {"column": "region", "op": "eq", "value": "north"}}))
    .await
    .unwrap();
    assert_eq!(v["result"], 3);
    let v = run(json!({"operation": "count",
        "filter": {"column": "amount", "op": "gt", "value": 1}}))
    .await
    .unwrap();
    assert_eq!(v["result"], 3);
    let v = run(json!({"operation": "count",
        "filter": {"column": "amount", "op": "le", "value": "2"}}))
    .await
    .unwrap();
    assert_eq!(v["result"], 2, "numeric compare of text value");
    let v = run(json!({"operation": "count",
        "filter": {"column": "note", "op": "contains", "value": "COMMA"}}))
    .await
    .unwrap();
    assert_eq!(v["result"], 1);
    let v = run(json!({"operation": "count",
        "filter": {"column": "amount", "op": "ne", "value": 10}}))
    .await
    .unwrap();
    assert_eq!(v["result"], 5);
}

#[tokio::test]
async fn numeric_operations_skip_bad_cells() {
    let v = run(json!({"operation": "sum", "column": "amount"}))
        .await
        .unwrap();
    assert_eq!(v["result"], 16.5);
    assert_eq!(v["count"], 4);
    assert_eq!(v["non_numeric_skipped"], 1);
    assert_eq!(v["empty_skipped"], 1);
    let v = run(json!({"operation": "mean", "column": "amount"}))
        .await
        .unwrap();
    assert_eq!(v["result"], 16.5 / 4.0);
    let v = run(json!({"operation": "min", "column": "amount"}))
        .await
        .unwrap();
    assert_eq!(v["result"], -1.0);
    let v = run(json!({"operation": "max", "column": " AMOUNT "}))
        .await
        .unwrap();
    assert_eq!(v["result"], 10.0);
    assert_eq!(v["column"], "amount", "loose column match resolved");
    let v = run(json!({"operation": "max", "column": "product"}))
        .await
        .unwrap();
    assert_eq!(v["result"], Value::Null);
    assert_eq!(v["non_numeric_skipped"], 6);
}

#[tokio::test]
async fn grouping() {
    let v = run(json!({"operation": "group_count", "group_by": "region"}))
        .await
        .unwrap();
    assert_eq!(
        v["result"],
        json!([{"value": "north", "count": 3}, {"value": "south", "count": 2},
               {"value": "east", "count": 1}])
    );
    assert_eq!(v["groups_total"], 3);
    assert_eq!(v["truncated"], false);
    let v = run(json!({"operation": "group_count", "column": "product", "limit": 1}))
        .await
        .unwrap();
    assert_eq!(v["result"], json!([{"value": "apple", "count": 3}]));
    assert_eq!(v["truncated"], true);
    let v = run(json!({"operation": "sum", "column": "amount", "group_by": "region"}))
        .await
        .unwrap();
    assert_eq!(
        v["result"],
        json!([{"group": "north", "value": 12.0, "count": 2},
               {"group": "south", "value": 4.5, "count": 2}])
    );
    assert_eq!(v["groups_total"], 3, "east has no numeric value");
    let v = run(json!({"operation": "distinct", "column": "product"}))
        .await
        .unwrap();
    assert_eq!(v["result"], 3);
    assert_eq!(v["values"], json!(["apple", "pear", "plum"]));
}

#[tokio::test]
async fn unknown_and_missing_columns() {
    let err = run(json!({"operation": "sum", "column": "price"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::InvalidArguments(
            "column: column 'price' not found; available columns: 'region', 'product', \
             'amount', 'note'"
                .into()
        )
    );
    let err = run(json!({"operation": "count",
        "filter": {"column": "zone", "op": "eq", "value": "x"}}))
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("filter.column: column 'zone'"),
        "{err}"
    );
    let err = run(json!({"operation": "mean"})).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::InvalidArguments("column: required for operation 'mean'".into())
    );
    let err = run(json!({"operation": "median", "column": "amount"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_arguments");
    let err = run(json!({"operation": "count", "colum": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_arguments");
}

#[tokio::test]
async fn ragged_rows_bom_and_bad_files() {
    let (_tmp, tool, c) = setup("\u{feff}a,b\n1,2\n3\n4,5,6\n\"unterminated,7\n".as_bytes()).await;
    let v = tool
        .call(
            &c,
            json!({"path": "data/sales.csv", "operation": "sum", "column": "a"}),
        )
        .await
        .unwrap();
    assert_eq!(v["result"], 8.0);
    assert_eq!(v["ragged_rows"], 3);
    assert_eq!(v["non_numeric_skipped"], 1);

    let (_tmp, tool, c) = setup(b"").await;
    let err = tool
        .call(&c, json!({"path": "data/sales.csv", "operation": "count"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no header row"), "{err}");

    let (_tmp, tool, c) = setup(b"name\n\xff\xfe\n").await;
    let v = tool
        .call(
            &c,
            json!({"path": "data/sales.csv", "operation": "distinct", "column": "name"}),
        )
        .await
        .unwrap();
    assert_eq!(v["result"], 1, "non-UTF-8 cells decoded lossily");

    let err = tool
        .call(&c, json!({"path": "../x.csv", "operation": "count"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_arguments");
    let err = tool
        .call(&c, json!({"path": "missing.csv", "operation": "count"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed("file not found: 'missing.csv'".into())
    );
}

fn request(op: CsvOperation, column: Option<&str>, max_rows: u64) -> ScanRequest {
    ScanRequest {
        path: "t.csv".into(),
        operation: op,
        column: column.map(str::to_owned),
        group_by: None,
        filter: None,
        limit: None,
        max_rows,
    }
}

#[test]
fn row_and_group_limits() {
    let mut csv = String::from("id\n");
    for i in 0..(MAX_GROUPS + 10) {
        csv.push_str(&format!("{i}\n"));
    }
    let v = scan(csv.as_bytes(), &request(CsvOperation::Count, None, 100)).unwrap();
    assert_eq!(v["rows_scanned"], 100);
    assert_eq!(v["row_limit_reached"], true);
    let v = scan(
        csv.as_bytes(),
        &request(CsvOperation::Count, None, u64::MAX),
    )
    .unwrap();
    assert_eq!(v["row_limit_reached"], false);
    let exact = (MAX_GROUPS + 10) as u64;
    let v = scan(csv.as_bytes(), &request(CsvOperation::Count, None, exact)).unwrap();
    assert_eq!(v["row_limit_reached"], false, "exactly at the limit");
    let v = scan(
        csv.as_bytes(),
        &request(CsvOperation::Distinct, Some("id"), u64::MAX),
    )
    .unwrap();
    assert_eq!(v["result"], MAX_GROUPS);
    assert_eq!(v["truncated"], true);
    assert_eq!(v["distinct_limit_reached"], true);
    assert_eq!(v["values"].as_array().unwrap().len(), 50);
}

#[test]
fn number_parsing_rejects_non_finite() {
    use crate::tools::builtin::csv_scan::parse_number;
    assert_eq!(parse_number(" 1e3 "), Some(1000.0));
    assert_eq!(parse_number("-0.5"), Some(-0.5));
    for bad in ["NaN", "inf", "-infinity", "1,000", "", "abc"] {
        assert_eq!(parse_number(bad), None, "{bad}");
    }
}
