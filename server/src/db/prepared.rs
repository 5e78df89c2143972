//! Raw SQL that each connection prepares once and then reuses.
//!
//! diesel treats every raw query, every UPDATE and every multi-row INSERT as unsafe to cache,
//! so diesel-async prepares such a statement again on every call. That costs an extra round
//! trip, during which the connection's statement cache stays locked (so pipelined statements
//! queue behind it), and Postgres parses and plans the text afresh. The statements of an agent
//! turn have fixed text, so they go through [`Sql`] instead. Its text is `&'static str`, so it
//! can only be one of the finitely many statements written in this crate, which makes it safe
//! to cache.
//!
//! Placeholders are `$1`, `$2`, … as in Postgres and may repeat. Each use is sent as its own
//! parameter, because diesel numbers parameters in the order they are pushed.

use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};
use diesel::QueryResult;

/// A fixed SQL statement and its bind values; run it with diesel-async's `RunQueryDsl`
/// (`execute`, or `load`/`get_result` into a `QueryableByName` row).
#[must_use = "a statement does nothing until it is run"]
pub struct Sql<B = ()> {
    text: &'static str,
    binds: B,
}

/// Starts a statement; add its parameters in placeholder order with [`Sql::bind`].
pub fn sql(text: &'static str) -> Sql<()> {
    Sql { text, binds: () }
}

/// One bind value with its SQL type.
pub struct Bind<ST, V> {
    value: V,
    sql_type: PhantomData<fn() -> ST>,
}

impl<B: BindList> Sql<B> {
    /// Binds the next placeholder (`$1` first).
    pub fn bind<ST, V>(self, value: V) -> Sql<(B, Bind<ST, V>)> {
        Sql {
            text: self.text,
            binds: (
                self.binds,
                Bind {
                    value,
                    sql_type: PhantomData,
                },
            ),
        }
    }
}

/// The bind values of a statement, addressable by placeholder number.
pub trait BindList {
    /// How many values are bound.
    const LEN: usize;

    /// Pushes value `index` (zero-based) as the next parameter.
    fn push<'b>(&'b self, index: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

impl BindList for () {
    const LEN: usize = 0;

    fn push<'b>(&'b self, index: usize, _: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        Err(unbound(index + 1))
    }
}

impl<B, ST, V> BindList for (B, Bind<ST, V>)
where
    B: BindList,
    Pg: HasSqlType<ST>,
    V: ToSql<ST, Pg>,
{
    const LEN: usize = B::LEN + 1;

    fn push<'b>(&'b self, index: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        if index == B::LEN {
            out.push_bind_param::<ST, V>(&self.1.value)
        } else {
            self.0.push(index, out)
        }
    }
}

/// One field of every row, for binding a column as an array: any number of rows inserted
/// with one statement of fixed text ([`crate::db::rows_insert`]).
pub fn column<R, T>(rows: &[R], field: impl Fn(&R) -> T) -> Vec<T> {
    rows.iter().map(field).collect()
}

/// Sends the insert `statement` builds for `rows`, or nothing when there are none: the
/// future does not borrow the connection (pipelinable).
pub fn insert_rows<R, B>(
    conn: &mut diesel_async::AsyncPgConnection,
    rows: &[R],
    statement: impl FnOnce(&[R]) -> Sql<B>,
) -> futures_util::future::BoxFuture<'static, QueryResult<()>>
where
    B: BindList + Send + 'static,
{
    use diesel_async::RunQueryDsl;
    use futures_util::future::FutureExt;
    if rows.is_empty() {
        return futures_util::future::ready(Ok(())).boxed();
    }
    statement(rows).execute(conn).map(|r| r.map(drop)).boxed()
}

fn unbound(placeholder: impl std::fmt::Display) -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError(
        format!("placeholder ${placeholder} has no bound value").into(),
    )
}

impl<B: BindList> QueryFragment<Pg> for Sql<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut rest = self.text;
        while let Some(at) = rest.find('$') {
            let digits = rest[at + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits == 0 {
                // A `$` that starts no placeholder (inside a literal, say).
                out.push_sql(&rest[..=at]);
                rest = &rest[at + 1..];
                continue;
            }
            out.push_sql(&rest[..at]);
            let placeholder = &rest[at + 1..at + 1 + digits];
            let number = match placeholder.parse::<usize>() {
                Ok(n) if (1..=B::LEN).contains(&n) => n,
                _ => return Err(unbound(placeholder)),
            };
            self.binds.push(number - 1, &mut out)?;
            rest = &rest[at + 1 + digits..];
        }
        out.push_sql(rest);
        // Deliberately no `unsafe_to_cache_prepared`: the text is static (see the module docs).
        Ok(())
    }
}

impl<B> QueryId for Sql<B> {
    type QueryId = ();
    // The cache is keyed by the generated text instead of the Rust type.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Sql<B> {
    type SqlType = Untyped;
}

impl<B, Conn> diesel::RunQueryDsl<Conn> for Sql<B> {}

/// A fixed statement boxed as a part of a [`Joined`] one.
pub type Part = Box<dyn QueryFragment<Pg> + Send + 'static>;

impl<B: BindList + Send + 'static> Sql<B> {
    /// This statement as a named part of a [`Joined`] one.
    pub fn part(self) -> Part {
        Box::new(self)
    }
}

/// Fixed statements sent as one: `WITH name AS (part), … last`. Every statement costs the
/// server its building and a protocol exchange, and Postgres its executor start-up and a
/// reply, and a single statement is a transaction of its own, with no BEGIN or COMMIT to
/// send (how much that saves a turn: `tests/load/RESULTS-issue43-joined.md`). Each part keeps
/// its own placeholders (`$1` is its own first value): diesel numbers them across the
/// whole. Which parts are present may vary; each combination is a text of its own,
/// prepared once per connection like any other.
///
/// Postgres runs the parts in no documented order; a part that must wait for another's row
/// locks says so by reading that part (`WHERE EXISTS (SELECT 1 FROM r)`).
#[must_use = "a statement does nothing until it is run"]
pub struct Joined {
    parts: Vec<(&'static str, Part)>,
    last: Part,
}

/// Starts a [`Joined`] statement whose result is `last`'s; add its parts with [`Joined::with`].
pub fn joined(last: Part) -> Joined {
    Joined {
        parts: Vec::new(),
        last,
    }
}

impl Joined {
    /// Adds `part` as the CTE `name` (after the parts already added).
    pub fn with(mut self, name: &'static str, part: Part) -> Self {
        self.parts.push((name, part));
        self
    }

    /// Whether any part was added.
    pub fn has_parts(&self) -> bool {
        !self.parts.is_empty()
    }
}

impl QueryFragment<Pg> for Joined {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        for (i, (name, part)) in self.parts.iter().enumerate() {
            out.push_sql(if i == 0 { "WITH " } else { ", " });
            out.push_sql(name);
            out.push_sql(" AS (");
            part.walk_ast(out.reborrow())?;
            out.push_sql(")");
        }
        if !self.parts.is_empty() {
            out.push_sql(" ");
        }
        self.last.walk_ast(out.reborrow())
    }
}

impl QueryId for Joined {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Joined {
    type SqlType = Untyped;
}

impl<Conn> diesel::RunQueryDsl<Conn> for Joined {}

/// A fixed statement whose rows are read by position into a `Queryable` type of SQL type
/// `ST` ([`Sql::returns`]): a row read by column name (`QueryableByName`) looks every
/// column up by comparing names, which for a turn's history is most of the decoding.
#[must_use = "a statement does nothing until it is run"]
pub struct Typed<B, ST> {
    statement: Sql<B>,
    sql_type: PhantomData<fn() -> ST>,
}

impl<B: BindList> Sql<B> {
    /// Reads the rows by position, as `ST` (the select list must be in that order).
    pub fn returns<ST>(self) -> Typed<B, ST> {
        Typed {
            statement: self,
            sql_type: PhantomData,
        }
    }
}

impl<B: BindList, ST> QueryFragment<Pg> for Typed<B, ST> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.statement.walk_ast(out)
    }
}

impl<B, ST> QueryId for Typed<B, ST> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B, ST: diesel::sql_types::SqlType> Query for Typed<B, ST> {
    type SqlType = ST;
}

impl<B, ST, Conn> diesel::RunQueryDsl<Conn> for Typed<B, ST> {}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::sql_types::{BigInt, Text};

    #[test]
    fn repeated_placeholders_become_separate_parameters() {
        let q = sql("SELECT $1 + $2, $1 WHERE x = '$' AND y = $2")
            .bind::<BigInt, _>(7_i64)
            .bind::<Text, _>("a");
        let shown = diesel::debug_query::<Pg, _>(&q).to_string();
        assert!(
            shown.starts_with(
                "SELECT $1 + $2, $3 WHERE x = '$' AND y = $4 -- binds: [7, \"a\", 7, \"a\"]"
            ),
            "{shown}"
        );
    }

    #[test]
    fn is_cacheable_unlike_sql_query() {
        let q = sql("SELECT $1").bind::<BigInt, _>(1_i64);
        assert!(q.is_safe_to_cache_prepared(&Pg).unwrap());
        let raw = diesel::sql_query("SELECT $1").bind::<BigInt, _>(1_i64);
        assert!(!raw.is_safe_to_cache_prepared(&Pg).unwrap());
    }

    #[test]
    fn joined_parts_number_their_placeholders_across_the_whole() {
        let q = joined(sql("SELECT $1 FROM r").bind::<BigInt, _>(3_i64).part())
            .with(
                "r",
                sql("UPDATE t SET a = $1 WHERE b = $2 RETURNING 1")
                    .bind::<BigInt, _>(1_i64)
                    .bind::<Text, _>("x")
                    .part(),
            )
            .with(
                "s",
                sql("DELETE FROM u WHERE c = $1 AND EXISTS (SELECT 1 FROM r)")
                    .bind::<Text, _>("y")
                    .part(),
            );
        let shown = diesel::debug_query::<Pg, _>(&q).to_string();
        assert!(
            shown.starts_with(
                "WITH r AS (UPDATE t SET a = $1 WHERE b = $2 RETURNING 1), \
                 s AS (DELETE FROM u WHERE c = $3 AND EXISTS (SELECT 1 FROM r)) \
                 SELECT $4 FROM r -- binds: [1, \"x\", \"y\", 3]"
            ),
            "{shown}"
        );
        assert!(q.is_safe_to_cache_prepared(&Pg).unwrap());
        let alone = joined(sql("SELECT 1").part());
        assert_eq!(
            diesel::debug_query::<Pg, _>(&alone).to_string(),
            "SELECT 1 -- binds: []"
        );
    }

    #[test]
    fn a_placeholder_without_a_value_is_an_error_not_a_panic() {
        for text in ["SELECT $2", "SELECT $0"] {
            let q = sql(text).bind::<BigInt, _>(1_i64);
            let mut builder = diesel::pg::PgQueryBuilder::default();
            let err = q.to_sql(&mut builder, &Pg).unwrap_err();
            assert!(err.to_string().contains("has no bound value"), "{err}");
        }
    }
}
