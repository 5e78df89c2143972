//! `server/src/db/schema.rs` says what the database holds; the migrations (and knowledge's
//! start-up step, which adds the pgvector column) make it. This test migrates a fresh
//! database through a real server start and compares the two, both ways: every table and
//! column, its SQL type, its nullability and the primary key. A column added by a migration
//! and forgotten in schema.rs (or the reverse) fails here instead of in a query at run time.

use std::collections::BTreeMap;

use agentchat_tests::*;
use diesel::sql_types::{Integer, Text};
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;

/// schema.rs as compiled into the server.
const SCHEMA_RS: &str = include_str!("../../server/src/db/schema.rs");

/// One column as both sides describe it: (SQL type as Postgres names it, nullable).
type Columns = BTreeMap<String, (String, bool)>;

#[derive(Debug, Default, Clone, PartialEq)]
struct Table {
    primary_key: Vec<String>,
    columns: Columns,
}

/// Postgres's `udt_name` for a Diesel SQL type (the last path segment; `Array<T>` is `_t`).
fn udt_name(diesel_type: &str) -> String {
    if let Some(inner) = diesel_type
        .strip_prefix("Array<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!("_{}", udt_name(inner));
    }
    let last = diesel_type.rsplit("::").next().unwrap_or(diesel_type);
    match last {
        "Text" => "text",
        "Uuid" => "uuid",
        "Int2" | "SmallInt" => "int2",
        "Int4" | "Integer" => "int4",
        "Int8" | "BigInt" => "int8",
        "Bool" => "bool",
        "Timestamptz" => "timestamptz",
        "Timestamp" => "timestamp",
        "Date" => "date",
        "Bytea" => "bytea",
        "Json" => "json",
        "Jsonb" => "jsonb",
        "Numeric" => "numeric",
        "Float4" => "float4",
        "Float8" => "float8",
        // schema.rs's own `sql_types` (pgvector's and full-text search's types).
        "Vector" => "vector",
        "Tsvector" => "tsvector",
        other => panic!("schema_drift does not know the Diesel type {other}: add it"),
    }
    .to_owned()
}

/// The tables `diesel::table!` declares in schema.rs.
fn declared() -> BTreeMap<String, Table> {
    let mut tables = BTreeMap::new();
    let mut lines = SCHEMA_RS.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if !line.ends_with("table! {") {
            continue;
        }
        // `name (pk, ...) {`, after any `use` lines.
        let header = lines
            .by_ref()
            .find(|l| !l.is_empty() && !l.starts_with("use ") && !l.starts_with("#["))
            .expect("a table! header");
        let (name, rest) = header.split_once(' ').expect("`name (pk) {`");
        let pk = rest
            .trim_start_matches('(')
            .split_once(')')
            .expect("a primary key in parentheses")
            .0;
        let mut table = Table {
            primary_key: pk.split(',').map(|c| c.trim().to_owned()).collect(),
            columns: Columns::new(),
        };
        for line in lines.by_ref() {
            if line == "}" {
                break;
            }
            if line.starts_with("#[") || line.starts_with("//") || line.is_empty() {
                continue;
            }
            let (column, ty) = line
                .trim_end_matches(',')
                .split_once("->")
                .unwrap_or_else(|| panic!("a column line `name -> Type,`: {line}"));
            let ty = ty.trim();
            let (ty, nullable) = match ty
                .strip_prefix("Nullable<")
                .and_then(|t| t.strip_suffix('>'))
            {
                Some(inner) => (inner, true),
                None => (ty, false),
            };
            table.columns.insert(
                column.trim().trim_start_matches("r#").to_owned(),
                (udt_name(ty), nullable),
            );
        }
        assert!(
            tables.insert(name.to_owned(), table).is_none(),
            "{name} is declared twice in schema.rs"
        );
    }
    tables
}

#[derive(QueryableByName)]
struct ColumnRow {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Text)]
    udt_name: String,
    #[diesel(sql_type = Text)]
    is_nullable: String,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Integer)]
    #[allow(dead_code)]
    position: i32,
}

/// The tables of the migrated database (Diesel's own bookkeeping table left out).
async fn migrated(app: &TestApp) -> BTreeMap<String, Table> {
    let mut conn = app.db().await;
    let columns: Vec<ColumnRow> = diesel::sql_query(
        "SELECT c.table_name::text, c.column_name::text, c.udt_name::text, c.is_nullable::text \
           FROM information_schema.columns c \
           JOIN information_schema.tables t USING (table_schema, table_name) \
          WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' \
            AND c.table_name <> '__diesel_schema_migrations'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let keys: Vec<KeyRow> = diesel::sql_query(
        "SELECT k.table_name::text, k.column_name::text, k.ordinal_position::int AS position \
           FROM information_schema.table_constraints tc \
           JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name) \
          WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY' \
            AND k.table_name <> '__diesel_schema_migrations' \
          ORDER BY k.table_name, k.ordinal_position",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let mut tables: BTreeMap<String, Table> = BTreeMap::new();
    for c in columns {
        tables
            .entry(c.table_name)
            .or_default()
            .columns
            .insert(c.column_name, (c.udt_name, c.is_nullable == "YES"));
    }
    for k in keys {
        tables
            .entry(k.table_name)
            .or_default()
            .primary_key
            .push(k.column_name);
    }
    tables
}

/// Every difference, in words, so one run names them all.
fn differences(
    declared: &BTreeMap<String, Table>,
    migrated: &BTreeMap<String, Table>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, table) in migrated {
        let Some(decl) = declared.get(name) else {
            out.push(format!(
                "table {name} is in the database but not in schema.rs"
            ));
            continue;
        };
        if decl.primary_key != table.primary_key {
            out.push(format!(
                "{name}: primary key is {:?} in the database, {:?} in schema.rs",
                table.primary_key, decl.primary_key
            ));
        }
        for (column, (ty, nullable)) in &table.columns {
            match decl.columns.get(column) {
                None => out.push(format!("{name}.{column} ({ty}) is not in schema.rs")),
                Some(d) if d != &(ty.clone(), *nullable) => out.push(format!(
                    "{name}.{column}: database has {ty}{}, schema.rs {}{}",
                    if *nullable { " NULL" } else { " NOT NULL" },
                    d.0,
                    if d.1 { " NULL" } else { " NOT NULL" },
                )),
                Some(_) => {}
            }
        }
        for column in decl.columns.keys() {
            if !table.columns.contains_key(column) {
                out.push(format!(
                    "{name}.{column} is in schema.rs but not in the database"
                ));
            }
        }
    }
    for name in declared.keys() {
        if !migrated.contains_key(name) {
            out.push(format!(
                "table {name} is in schema.rs but not in the database"
            ));
        }
    }
    out
}

/// On pgvector, so that knowledge's start-up step adds `chunks.embedding` as it does in
/// production (the shared cluster has no pgvector, and there the column is never made).
#[tokio::test]
async fn schema_rs_matches_the_migrated_database() {
    let app = TestApp::builder().on_pgvector().start().await;
    let declared = declared();
    assert!(
        declared.len() > 20,
        "schema.rs parsed to {} tables",
        declared.len()
    );
    let diff = differences(&declared, &migrated(&app).await);
    assert!(
        diff.is_empty(),
        "server/src/db/schema.rs has drifted from the migrated database:\n  {}",
        diff.join("\n  ")
    );
}

/// The comparison itself sees a drift: a column one side lacks, a type or nullability
/// that differs, a table one side lacks.
#[test]
fn a_drift_is_named() {
    let declared = declared();
    let mut migrated = declared.clone();
    let users = migrated.get_mut("users").unwrap();
    users
        .columns
        .insert("nickname".into(), ("text".into(), true));
    users
        .columns
        .insert("disabled".into(), ("bool".into(), true));
    migrated.remove("roles");
    let diff = differences(&declared, &migrated);
    assert_eq!(diff.len(), 3, "{diff:#?}");
    assert!(diff[0].contains("users.disabled"), "{diff:#?}");
    assert!(diff[1].contains("users.nickname"), "{diff:#?}");
    assert!(diff[2].contains("table roles is in schema.rs"), "{diff:#?}");
}
