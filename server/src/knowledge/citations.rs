//! Citations: an answer cites the passages `search_knowledge` gave it as `[K42]` (the
//! chunk's id). At the end of the turn the markers are read and resolved, for the
//! conversation's owner and only inside what they may read, into what is stored with the
//! message: the file, its collection, the byte range and a short quote, so a citation still
//! says what it said after the file changes.

use diesel::sql_types::{Array, BigInt, Integer, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::collections::READABLE_BY_1;

/// Most citations kept for one answer.
const MAX_CITATIONS: usize = 50;
/// Characters of the passage kept with a citation.
const QUOTE_CHARS: usize = 300;

/// One cited passage, as stored on the message (`messages.citations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Citation {
    /// Its number in the answer, in order of first mention.
    pub n: usize,
    /// The marker as the answer wrote it, without brackets (`K42`).
    pub marker: String,
    pub collection_id: Uuid,
    /// The file (document) id.
    pub file_id: Uuid,
    pub file: String,
    pub byte_start: i32,
    pub byte_end: i32,
    pub quote: String,
}

/// The chunk ids an answer's markers name, in order of first mention, without repeats.
/// A marker is `K` and digits, inside square brackets, alone or in a list: `[K1]`,
/// `[K1, K2]`, `[K1][K2]`.
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
                    .strip_prefix('K')
                    .filter(|d| {
                        !d.is_empty() && d.len() <= 18 && d.bytes().all(|b| b.is_ascii_digit())
                    })
                    .and_then(|d| d.parse::<i64>().ok());
                match id {
                    Some(id) if !ids.contains(&id) => ids.push(id),
                    Some(_) => {}
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
    #[diesel(sql_type = SqlUuid)]
    collection_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    document_id: Uuid,
    #[diesel(sql_type = Text)]
    file: String,
    #[diesel(sql_type = Integer)]
    byte_start: i32,
    #[diesel(sql_type = Integer)]
    byte_end: i32,
    #[diesel(sql_type = Text)]
    text: String,
}

/// The citations of `answer` for `user` (none when it has no markers: no query then).
pub async fn resolve(
    conn: &mut AsyncPgConnection,
    user: Uuid,
    answer: &str,
) -> diesel::QueryResult<Vec<Citation>> {
    let ids = markers(answer);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT ch.id, ch.collection_id, ch.document_id, d.name AS file, ch.byte_start, \
                ch.byte_end, left(ch.text, {QUOTE_CHARS}) AS text \
           FROM chunks ch JOIN documents d ON d.id = ch.document_id \
           JOIN collections c ON c.id = ch.collection_id \
          WHERE ch.id = ANY($2) AND {READABLE_BY_1}"
    ))
    .bind::<SqlUuid, _>(user)
    .bind::<Array<BigInt>, _>(&ids)
    .load(conn)
    .await?;
    let mut out = Vec::new();
    for id in ids {
        if let Some(r) = rows.iter().find(|r| r.id == id) {
            out.push(Citation {
                n: out.len() + 1,
                marker: format!("K{id}"),
                collection_id: r.collection_id,
                file_id: r.document_id,
                file: r.file.clone(),
                byte_start: r.byte_start,
                byte_end: r.byte_end,
                quote: r.text.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::markers;

    #[test]
    fn markers_are_read_in_order_once() {
        assert_eq!(
            markers(
                "Refunds take 30 days [K12]. Shipping [K7, K12][K9]; not [see K3] or [K] or [Kx]."
            ),
            vec![12, 7, 9]
        );
        assert!(markers("no citations [1] here").is_empty());
        assert!(markers("[K99999999999999999999]").is_empty());
    }
}
