//! The text of an insert of any number of rows with one prepared statement, each column bound
//! as one array ([`crate::db::prepared::column`]).
//!
//! Two texts for the same binds: over `unnest` in the rows' order for any number of rows, and,
//! for exactly one row, each array's first element. A turn's inserts are mostly of one row
//! (its user message, its answer, its usage), and the one-row text has no function scan (one
//! per column, each set up for every execution) and no sort: about 15 µs of Postgres CPU less
//! per statement (`tests/load/PROFILE.md`, "One row without `unnest`").

/// Both texts of one table's insert, built once ([`std::sync::LazyLock`]) from its columns.
#[derive(Debug)]
pub struct RowsInsert {
    one: String,
    many: String,
}

impl RowsInsert {
    /// `columns` are the table's columns in bind order (`$1` first), each with the Postgres
    /// type of its elements (`uuid`, `text`, `int8`, …).
    pub fn new(table: &str, columns: &[(&str, &str)]) -> Self {
        let names = columns
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ");
        let arrays: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (_, element))| format!("${}::{element}[]", i + 1))
            .collect();
        let firsts: Vec<String> = arrays.iter().map(|a| format!("({a})[1]")).collect();
        RowsInsert {
            one: format!(
                "INSERT INTO {table} ({names}) VALUES ({})",
                firsts.join(", ")
            ),
            many: format!(
                "INSERT INTO {table} ({names}) SELECT {names} FROM unnest({}) \
                 WITH ORDINALITY AS r ({names}, n) ORDER BY n",
                arrays.join(", ")
            ),
        }
    }

    /// The text that inserts `rows` rows.
    pub fn text(&'static self, rows: usize) -> &'static str {
        match rows {
            1 => &self.one,
            _ => &self.many,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_takes_each_arrays_first_element_and_more_go_through_unnest_in_order() {
        let insert = RowsInsert::new("t", &[("id", "uuid"), ("body", "text")]);
        assert_eq!(
            insert.one,
            "INSERT INTO t (id, body) VALUES (($1::uuid[])[1], ($2::text[])[1])"
        );
        assert_eq!(
            insert.many,
            "INSERT INTO t (id, body) SELECT id, body FROM unnest($1::uuid[], $2::text[]) \
             WITH ORDINALITY AS r (id, body, n) ORDER BY n"
        );
    }
}
