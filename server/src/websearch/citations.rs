//! Web citations: an answer cites `web_search` results as `[W12]` (the result's id). When
//! the turn ends the markers are resolved, for the conversation's owner and only among their
//! own results, into what is stored with the message next to knowledge's citations:
//! `{kind: "web", n, marker, url, title, quote}` (the quote is the snippet the model read).

use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

/// Most web citations kept for one answer.
const MAX_CITATIONS: usize = 50;
/// Characters of the snippet kept with a citation.
const QUOTE_CHARS: usize = 300;

/// One cited web result, as stored on the message (`messages.citations`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct WebCitation {
    /// Always `web`.
    pub kind: &'static str,
    /// Its number among the answer's citations.
    pub n: usize,
    /// The marker as the answer wrote it, without brackets (`W12`).
    pub marker: String,
    pub url: String,
    pub title: String,
    pub quote: Option<String>,
}

/// The result ids an answer's `[W…]` markers name, in order of first mention, without
/// repeats (`[W1]`, `[W1, W2]`, `[W1][W2]`; a bracket may mix in `K…` markers).
pub fn markers(text: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inside = &after[..close];
        if inside.len() <= 200 {
            for part in inside.split([',', ';', ' ']).filter(|p| !p.is_empty()) {
                let id = part
                    .strip_prefix('W')
                    .filter(|d| {
                        !d.is_empty() && d.len() <= 18 && d.bytes().all(|b| b.is_ascii_digit())
                    })
                    .and_then(|d| d.parse::<i64>().ok());
                let knowledge = part
                    .strip_prefix('K')
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
                match id {
                    Some(id) if !ids.contains(&id) => ids.push(id),
                    Some(_) => {}
                    None if knowledge => {}
                    None => break,
                }
            }
        }
        rest = &after[close + 1..];
        if ids.len() >= MAX_CITATIONS {
            break;
        }
    }
    ids
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    title: String,
    #[diesel(sql_type = Text)]
    snippet: String,
}

/// The web citations of `answer` for `user`, numbered after the `already` citations the
/// answer has (none when it has no `[W…]` markers: no query then).
pub async fn resolve(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    answer: &str,
    already: usize,
) -> diesel::QueryResult<Vec<WebCitation>> {
    let ids = markers(answer);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT id, url, title, left(snippet, {QUOTE_CHARS}) AS snippet \
           FROM web_search_results WHERE id = ANY($2) AND user_id = $1"
    ))
    .bind::<SqlUuid, _>(user)
    .bind::<Array<BigInt>, _>(&ids)
    .load(conn)
    .await?;
    let mut out = Vec::new();
    for id in ids {
        if let Some(r) = rows.iter().find(|r| r.id == id) {
            out.push(WebCitation {
                kind: "web",
                n: already + out.len() + 1,
                marker: format!("W{id}"),
                url: r.url.clone(),
                title: r.title.clone(),
                quote: (!r.snippet.is_empty()).then(|| r.snippet.clone()),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::markers;

    #[test]
    fn web_markers_are_read_in_order_once() {
        assert_eq!(
            markers(
                "Rust 1.80 shipped [W12]. See also [W7, W12][W9]; [K3, W4] not [see W3] or [W]."
            ),
            vec![12, 7, 9, 4]
        );
        assert!(markers("no citations [1] here [K5]").is_empty());
    }
}
