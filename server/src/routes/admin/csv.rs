//! CSV export of the audit listings: RFC 4180 quoting, and cells a spreadsheet would run as
//! a formula (`=`, `+`, `-`, `@`, tab, carriage return first) prefixed with `'`, since audit
//! rows carry text that users and models chose.

use actix_web::{http::header, HttpRequest, HttpResponse};

/// Most rows one export holds; a larger trail is exported in time ranges.
pub const MAX_EXPORT_ROWS: i64 = 50_000;

/// Whether the caller asked for CSV (`?format=csv` or `Accept: text/csv`).
pub fn wants_csv(req: &HttpRequest, format: Option<&str>) -> bool {
    if let Some(f) = format {
        return f.eq_ignore_ascii_case("csv");
    }
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',')
                .any(|part| part.trim().to_ascii_lowercase().starts_with("text/csv"))
        })
}

/// One cell, quoted when needed and defused when it would start a formula.
pub fn cell(value: &str) -> String {
    let defused = match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_owned(),
    };
    if defused.contains([',', '"', '\n', '\r']) || defused.starts_with(' ') {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused
    }
}

/// Builds a CSV document from a header and rows of cells.
pub struct CsvWriter {
    out: String,
}

impl CsvWriter {
    pub fn new(header: &[&str]) -> Self {
        let mut w = Self { out: String::new() };
        w.row(header.iter().map(|s| (*s).to_owned()));
        w
    }

    pub fn row(&mut self, cells: impl IntoIterator<Item = String>) {
        let line: Vec<String> = cells.into_iter().map(|c| cell(&c)).collect();
        self.out.push_str(&line.join(","));
        self.out.push_str("\r\n");
    }

    /// A download named `filename`.
    pub fn respond(self, filename: &str) -> HttpResponse {
        HttpResponse::Ok()
            .content_type("text/csv; charset=utf-8")
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(self.out)
    }
}

/// An optional value as a cell (empty when absent).
pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A timestamp as a cell: RFC 3339 in UTC, which spreadsheets parse.
pub fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_commas_quotes_and_newlines() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn defuses_formulas() {
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-2"), "'-2");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("\tx"), "'\tx");
        assert_eq!(cell("a=b"), "a=b");
    }
}
