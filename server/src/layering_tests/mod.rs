//! The layering rules, checked over the source. Every module of the crate is in a room of
//! [`table::ROOMS`], and each file names only its own room and the rooms its row lists
//! (`crate::x`, `super::x` and `self::x` paths, in `use` lines, multi-line groups, code and
//! serde strings; see [`scan`]). The table has no cycle, only the HTTP side uses the edge
//! (`state`, `extract`, `error`), `actix_web` is for the rooms marked HTTP, and the turn's
//! insides (`turn::sql`, `turn::testing`) are the turn's own.
//!
//! Each rule is shown to fail on a planted violation by the unit tests of the checker at the
//! end of this file.

mod rules;
mod scan;
mod table;

use std::path::{Path, PathBuf};

use table::{Room, EDGE, EDGE_USERS, PRIVATE, ROOMS};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its path under `root` (`auth/jwt.rs`).
fn files(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name = relative.to_string_lossy().replace('\\', "/");
            out.push((name, std::fs::read_to_string(&path)?));
        }
    }
    Ok(())
}

/// The crate's top-level modules: `src`'s directories and files, less the crate roots and
/// the test-only modules.
fn top_modules() -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src())? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let module = name.trim_end_matches(".rs").to_owned();
        let rust = path.is_dir() || name.ends_with(".rs");
        if rust && !["lib", "main"].contains(&module.as_str()) && !module.ends_with("_tests") {
            out.push(module);
        }
    }
    Ok(out)
}

/// Whether `path` (`auth::oidc::account`) is a module under `src`.
fn module_exists(path: &str) -> bool {
    let relative: PathBuf = path.split("::").collect();
    let dir = src().join(&relative);
    dir.is_dir() || dir.with_extension("rs").is_file()
}

#[test]
fn every_module_is_in_a_room() -> std::io::Result<()> {
    let found = rules::unroomed(&top_modules()?, ROOMS);
    assert!(found.is_empty(), "{}", found.join("\n"));
    Ok(())
}

#[test]
fn the_table_has_no_cycle_and_keeps_the_edge_to_the_http_side() {
    let found = rules::table_problems(ROOMS, EDGE, EDGE_USERS, module_exists);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_layering_rules_hold() -> std::io::Result<()> {
    let mut all = Vec::new();
    files(&src(), &src(), &mut all)?;
    let found = scan::check(&all, ROOMS, PRIVATE);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
    Ok(())
}

// The checker on planted violations: each rule fails when broken.

/// A small table: `low` uses nothing, `mid` uses `low`, `top` (HTTP) uses both and `edge`.
const PLANTED: &[Room] = &[
    Room::new("low", &[]),
    Room::new("mid", &["low"]),
    Room::new("edge", &["low"]).http(),
    Room::new("top", &["low", "mid", "edge"]).http(),
    Room::new("mid::face", &["low"]),
];

fn check_one(file: &str, text: &str) -> Vec<String> {
    scan::check(
        &[(file.to_owned(), text.to_owned())],
        PLANTED,
        &["mid::inside"],
    )
}

#[test]
fn a_forbidden_import_fails() {
    assert!(check_one("top/a.rs", "use crate::mid::Thing;\n").is_empty());
    let found = check_one("low.rs", "use crate::low::x;\nuse crate::mid::Thing;\n");
    assert_eq!(found, ["low.rs:2: `low` uses `mid` (crate::mid::Thing)"]);
    // In code, not only in `use` lines; and in serde's strings.
    let found = check_one("low.rs", "fn f() { crate::top::go(1) }\n");
    assert_eq!(found, ["low.rs:1: `low` uses `top` (crate::top::go)"]);
    let found = check_one(
        "low.rs",
        "#[serde(with = \"crate::mid::secs\")]\nstruct S;\n",
    );
    assert_eq!(found, ["low.rs:1: `low` uses `mid` (crate::mid::secs)"]);
    // A sub-room is a room: `mid::face` may not use `mid`.
    let found = check_one("mid/face.rs", "use crate::mid::Thing;\n");
    assert_eq!(
        found,
        ["mid/face.rs:1: `mid::face` uses `mid` (crate::mid::Thing)"]
    );
    // HTTP only where the table says so; the room's insides only from inside.
    assert_eq!(
        check_one("mid.rs", "use actix_web::web;\n"),
        ["mid.rs:1: `mid` uses actix_web"]
    );
    assert!(check_one("edge.rs", "use actix_web::web;\n").is_empty());
    let found = check_one("top.rs", "use crate::mid::inside::step;\n");
    assert_eq!(
        found,
        ["top.rs:1: `mid::inside` is its own room's, not `top`'s"]
    );
}

#[test]
fn a_multi_line_group_fails() {
    let text =
        "use crate::{\n    low::A,\n    mid::{\n        b::B,\n        C,\n    },\n    top,\n};\n";
    let found = check_one("low/x.rs", text);
    assert_eq!(
        found,
        [
            "low/x.rs:1: `low` uses `mid` (crate::mid::b::B)",
            "low/x.rs:1: `low` uses `mid` (crate::mid::C)",
            "low/x.rs:1: `low` uses `top` (crate::top)",
        ]
    );
}

#[test]
fn a_super_path_fails() {
    // `super::` from `low/a.rs` is `low`: its own room.
    assert!(check_one("low/a.rs", "use super::b::B;\n").is_empty());
    // From the room's top file, `super::` is the crate.
    let found = check_one("low/mod.rs", "use super::mid::M;\n");
    assert_eq!(found, ["low/mod.rs:1: `low` uses `mid` (crate::mid::M)"]);
    let found = check_one("low/a/b.rs", "use super::super::super::{top, low};\n");
    assert_eq!(found, ["low/a/b.rs:1: `low` uses `top` (crate::top)"]);
    // An inline module moves `super::` down one.
    let text = "mod inner {\n    use super::super::mid;\n}\nuse super::low;\n";
    let found = check_one("low.rs", text);
    assert_eq!(found, ["low.rs:2: `low` uses `mid` (crate::mid)"]);
}

#[test]
fn comments_strings_and_the_unit_tests_are_not_code() {
    let text = "// crate::top\n/* crate::top\n */ let s = \"{\"; let c = '{';\n\
                #[cfg(test)]\nmod tests {\nuse crate::top;\n}\n";
    assert!(check_one("low.rs", text).is_empty());
    assert!(check_one("low_tests.rs", "use crate::top;\n").is_empty());
    // After a brace in a string or a char, the inline module still ends where it does.
    let text = "mod m {\n    const S: &str = \"}\";\n}\nuse super::top;\n";
    assert_eq!(
        check_one("low.rs", text),
        ["low.rs:4: `low` uses `top` (crate::top)"]
    );
}

#[test]
fn a_cycle_in_the_table_fails() {
    assert_eq!(rules::cycle(PLANTED), None);
    let cyclic = &[
        Room::new("a", &["b"]),
        Room::new("b", &["c"]),
        Room::new("c", &["a"]),
    ];
    assert_eq!(rules::cycle(cyclic), Some(vec!["a", "b", "c", "a"]));
    let found = rules::table_problems(cyclic, &[], &[], |_| true);
    assert_eq!(found, ["the table has a cycle: a -> b -> c -> a"]);
}

#[test]
fn the_edge_off_the_http_side_and_unknown_names_fail() {
    let found = rules::table_problems(PLANTED, &["edge"], &["top"], |_| true);
    assert!(found.is_empty(), "{found:?}");
    let found = rules::table_problems(PLANTED, &["edge"], &[], |_| true);
    assert_eq!(found, ["`top` uses `edge`: only the HTTP side may ()"]);
    let found = rules::table_problems(PLANTED, &[], &[], |m| m != "mid::face");
    assert_eq!(found, ["`mid::face` names `mid::face`, which is no module"]);
    let unexplained = &[Room::new("a", &[]).names(&["b::Item"]), Room::new("b", &[])];
    let found = rules::table_problems(unexplained, &[], &[], |_| true);
    assert_eq!(found, ["`a` names items of other rooms: say why"]);
    let typo = &[Room::new("a", &["b"])];
    let found = rules::table_problems(typo, &[], &[], |_| true);
    assert_eq!(found, ["`a` uses `b`, which is no room"]);
}

#[test]
fn an_unknown_module_fails() {
    let modules = ["low".to_owned(), "mid".to_owned(), "new_room".to_owned()];
    let found = rules::unroomed(&modules, PLANTED);
    assert_eq!(
        found,
        ["module `new_room` is in no room of the table: add its row"]
    );
    // A file of it, and a path into it, fail the scan too.
    assert_eq!(
        check_one("new_room/a.rs", ""),
        ["new_room/a.rs: in no room of the table: add its room"]
    );
    assert_eq!(
        check_one("low.rs", "use crate::new_room::X;\n"),
        ["low.rs:1: `crate::new_room::X` is in no room of the table"]
    );
}
