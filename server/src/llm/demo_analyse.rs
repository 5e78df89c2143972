//! The demo model and the code interpreter: "analyse …" or "plot …" over an attached CSV or
//! log makes it write a small pandas program (group by a column, write `report.csv`, plot a
//! bar chart) and run it with `run_python`, then answer in one line from what the program
//! printed, so a newcomer sees the whole thing without an LLM.

use serde_json::{json, Value};

use super::attachment_note;
use super::{ChatRequest, Role, ToolChoice};

pub(super) const TOOL: &str = "run_python";

/// What the demo does next about an analysis request.
pub(super) enum Next {
    /// Runs this program with `run_python`.
    Call(Value),
    /// Answers with this text.
    Say(String),
}

/// What the demo does about an analysis request, or `None` when the last user message is
/// not one (then the usual rules apply).
pub(super) fn next(req: &ChatRequest) -> Option<Next> {
    let at = req.messages.iter().rposition(|m| m.role == Role::User)?;
    let asked = &req.messages[at].content;
    let words = words(asked);
    if !words
        .iter()
        .any(|w| matches!(w.as_str(), "analyse" | "analyze" | "plot" | "chart"))
    {
        return None;
    }
    let file = data_file(asked)?;
    let steps = &req.messages[at + 1..];
    if let Some(result) = steps.iter().find(|m| m.role == Role::Tool) {
        return Some(Next::Say(answer(&file, &result.content)));
    }
    let offered = req.tool_choice != ToolChoice::None && req.tools.iter().any(|t| t.name == TOOL);
    if !offered {
        return Some(Next::Say(format!(
            "I would analyse `{file}` with the `{TOOL}` tool (Python in a sandbox), but your \
             role does not allow it. An admin can allow it under Roles & tools."
        )));
    }
    let column = column_named(&words);
    Some(Next::Call(
        json!({"code": program(&file, column.as_deref()), "inputs": [file]}),
    ))
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The first attached (or named) `.csv`, `.tsv`, `.log` or `.txt` file.
fn data_file(text: &str) -> Option<String> {
    let is_data = |p: &str| {
        let lower = p.to_lowercase();
        [".csv", ".tsv", ".log", ".txt"]
            .iter()
            .any(|e| lower.ends_with(e))
    };
    if let Some(p) = attachment_note::parse(text)
        .into_iter()
        .find(|p| is_data(p))
    {
        return Some(p.to_owned());
    }
    text.split_whitespace()
        .map(|t| t.trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',' | '?' | '!')))
        .map(|t| t.trim_end_matches('.'))
        .find(|t| is_data(t))
        .map(str::to_owned)
}

/// The column after "by" ("group by error_code").
fn column_named(words: &[String]) -> Option<String> {
    let at = words.iter().position(|w| w == "by")?;
    words
        .get(at + 1)
        .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .cloned()
}

/// The Python the demo runs: a CSV is read with pandas; a log is read line by line and each
/// line's HTTP status (a three-digit number after the quoted request) becomes `status`.
fn program(file: &str, column: Option<&str>) -> String {
    let path = serde_json::to_string(&format!("/mnt/data/{file}")).unwrap_or_default();
    let wanted = serde_json::to_string(&column.unwrap_or("")).unwrap_or_default();
    format!(
        r##"import re
import pandas as pd
import matplotlib.pyplot as plt

path = {path}
wanted = {wanted}
if path.lower().endswith((".csv", ".tsv")):
    df = pd.read_csv(path, sep="\t" if path.lower().endswith(".tsv") else ",")
else:
    status = re.compile(r'" (\d{{3}}) ')
    rows = [m.group(1) for m in map(status.search, open(path, errors="replace")) if m]
    df = pd.DataFrame({{"status": rows}})
names = {{c.lower(): c for c in df.columns}}
preferred = [wanted, "error_code", "status", "code", "level", "category"]
column = next((names[c] for c in preferred if c in names), None)
if column is None:
    column = min(df.columns, key=lambda c: df[c].nunique())
counts = df[column].astype(str).value_counts()
report = counts.rename_axis(column).reset_index(name="count")
report.to_csv("/mnt/data/outputs/report.csv", index=False)
top = counts.head(20)
plt.figure(figsize=(8, 4))
plt.bar(top.index, top.values, color="#4f46e5")
plt.title(f"Rows by {{column}}")
plt.xlabel(column)
plt.ylabel("rows")
plt.xticks(rotation=45, ha="right")
plt.tight_layout()
plt.savefig("/mnt/data/outputs/chart.png", dpi=100)
# Closed, or the runner saves the still-open figure again as figure_1.png.
plt.close("all")
print(f"{{len(counts)}} distinct {{column}} values in {{len(df)}} rows, {{counts.index[0]}} the most frequent ({{counts.iloc[0]}} rows)")
"##
    )
}

/// The one-line answer from the run's result.
fn answer(file: &str, content: &str) -> String {
    let parsed: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    if let Some(err) = parsed.get("error").and_then(Value::as_str) {
        return format!("I could not analyse `{file}`: {err}");
    }
    let data = parsed.get("data").unwrap_or(&parsed);
    if data.get("exit").and_then(Value::as_i64) != Some(0) {
        let stderr = data.get("stderr").and_then(Value::as_str).unwrap_or("");
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("it failed");
        return format!("The analysis of `{file}` failed: {last}");
    }
    let line = data
        .get("stdout")
        .and_then(Value::as_str)
        .and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("done");
    let files: Vec<String> = data
        .get("files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.get("path").and_then(Value::as_str))
                .map(|p| format!("`{p}`"))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        format!("{line}.")
    } else {
        format!("{line}. Saved {}.", files.join(" and "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ToolCall, ToolSpec};

    fn request(messages: Vec<ChatMessage>, tools: &[&str]) -> ChatRequest {
        ChatRequest {
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).into(),
                    description: String::new(),
                    parameters: json!({}),
                })
                .collect(),
            ..ChatRequest::new("demo", messages)
        }
    }

    #[test]
    fn an_analysis_request_runs_python_then_answers_from_what_it_printed() {
        let ask = ChatMessage::user("analyse nginx.csv by error_code please");
        let req = request(vec![ask.clone()], &[TOOL]);
        let Some(Next::Call(args)) = next(&req) else {
            panic!("expected a call")
        };
        assert_eq!(args["inputs"], json!(["nginx.csv"]));
        let code = args["code"].as_str().unwrap();
        assert!(code.contains("wanted = \"error_code\""), "{code}");
        assert!(code.contains("/mnt/data/outputs/chart.png"));

        let call = ChatMessage::assistant_tool_calls(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: TOOL.into(),
                arguments: args.to_string(),
            }],
        );
        let result = json!({"success": true, "data": {"exit": 0,
            "stdout": "12 distinct error_code values in 90 rows, 504 the most frequent (30 rows)\n",
            "files": [{"path": "outputs/x/report.csv"}, {"path": "outputs/x/chart.png"}]}});
        let done = request(
            vec![
                ask,
                call,
                ChatMessage::tool_result("c1", result.to_string()),
            ],
            &[TOOL],
        );
        let Some(Next::Say(text)) = next(&done) else {
            panic!("expected an answer")
        };
        assert_eq!(
            text,
            "12 distinct error_code values in 90 rows, 504 the most frequent (30 rows). \
             Saved `outputs/x/report.csv` and `outputs/x/chart.png`."
        );
    }

    #[test]
    fn without_the_tool_it_says_so_and_other_requests_pass_by() {
        let req = request(vec![ChatMessage::user("plot access.log")], &[]);
        let Some(Next::Say(text)) = next(&req) else {
            panic!("expected a refusal")
        };
        assert!(text.contains("does not allow"), "{text}");
        assert!(next(&request(vec![ChatMessage::user("what is 2+2")], &[TOOL])).is_none());
        assert!(next(&request(
            vec![ChatMessage::user("analyse the market")],
            &[TOOL]
        ))
        .is_none());
    }
}
