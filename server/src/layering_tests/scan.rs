//! The scanner: which crate paths a source file names (`crate::…`, `super::…`, `self::…`,
//! in `use` lines, `use` groups over several lines, code and serde's `with = "crate::…"`
//! strings), and the check of those paths against the table of rooms.
//!
//! Not seen: paths relative to the file without `self::`/`super::` (a `mod.rs` naming its
//! own children), and names brought in through a re-export, which count as the room of the
//! path written. The unit tests at a file's end (`#[cfg(test)] mod tests {`) and files
//! named `*_tests.rs` are left out: tests may reach anywhere.

use super::table::Room;

/// A crate path a file names, made absolute (`super::jwt` in `auth/extract.rs` is
/// `["auth", "jwt"]`), and the line it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub line: usize,
    pub path: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// The text before the file's unit tests.
fn before_tests(text: &str) -> &str {
    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    &text[..end]
}

/// Tokens of `text` with their lines. Comments are left out; inside a string literal only
/// names and `::` are kept (its braces are not code); char literals and raw strings are
/// skipped.
fn tokens(text: &str) -> Vec<(usize, Tok)> {
    let b: Vec<char> = text.chars().collect();
    let at = |i: usize| b.get(i).copied();
    let mut out = Vec::new();
    let (mut line, mut i, mut in_str) = (1, 0, false);
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if !in_str && c == '/' && at(i + 1) == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if !in_str && c == '/' && at(i + 1) == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(b[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            in_str = !in_str;
            i += 1;
        } else if in_str && c == '\\' {
            line += usize::from(at(i + 1) == Some('\n'));
            i += 2;
        } else if !in_str && c == '\'' {
            if at(i + 1) == Some('\\') {
                i += 3;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == Some('\'') {
                i += 3;
            } else {
                i += 1; // a lifetime
            }
        } else if !in_str && (c == 'r' || c == 'b') && raw_string_at(&b, i) {
            let mut j = i + 1 + usize::from(c == 'b');
            let mut hashes = 0;
            while at(j) == Some('#') {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < b.len() {
                if b[j] == '"' && (1..=hashes).all(|h| at(j + h) == Some('#')) {
                    j += 1 + hashes;
                    break;
                }
                line += usize::from(b[j] == '\n');
                j += 1;
            }
            i = j;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((line, Tok::Ident(b[start..i].iter().collect())));
        } else if c == ':' && at(i + 1) == Some(':') {
            out.push((line, Tok::Colons));
            i += 2;
        } else {
            let tok = match c {
                _ if in_str => Tok::Other,
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                _ => Tok::Other,
            };
            out.push((line, tok));
            i += 1;
        }
    }
    out
}

/// Whether a raw string (`r"`, `r#"`, `br"`) starts at `i` (and not `r#ident`).
fn raw_string_at(b: &[char], i: usize) -> bool {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return false;
    }
    let mut j = i + 1;
    if b[i] == 'b' {
        if b.get(j) != Some(&'r') {
            return false;
        }
        j += 1;
    }
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    b.get(j) == Some(&'"')
}

/// What one file names: crate paths, and the lines that name `actix_web`.
#[derive(Debug, Default)]
pub struct Scan {
    pub named: Vec<Named>,
    pub actix_web: Vec<usize>,
}

/// Scans `text`, the file of module `module` (`["auth", "jwt"]` for `auth/jwt.rs`).
pub fn scan(text: &str, module: &[String]) -> Scan {
    let toks = tokens(before_tests(text));
    let kind = |j: usize| toks.get(j).map(|(_, t)| t);
    let mut found = Scan::default();
    let mut depth = 0usize;
    // Inline `mod name { … }` blocks the scan is inside, with the depth of their insides.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (line, tok) = &toks[i];
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            Tok::Ident(word) if word == "actix_web" => found.actix_web.push(*line),
            Tok::Ident(word) if word == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) = (kind(i + 1), kind(i + 2)) {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && kind(i + 1) == Some(&Tok::Colons)
                    && (i == 0 || kind(i - 1) != Some(&Tok::Colons)) =>
            {
                let here = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(n, _)| n.clone()));
                let mut base: Vec<String> = match word.as_str() {
                    "crate" => Vec::new(),
                    "self" => here.collect(),
                    _ => {
                        let mut h: Vec<String> = here.collect();
                        h.pop();
                        h
                    }
                };
                let mut j = i + 2;
                while kind(j) == Some(&Tok::Ident("super".into()))
                    && kind(j + 1) == Some(&Tok::Colons)
                {
                    base.pop();
                    j += 2;
                }
                let line = *line;
                let mut paths = Vec::new();
                i = tree(&toks, j, base, &mut paths);
                let named = paths.into_iter().filter(|p| !p.is_empty());
                found.named.extend(named.map(|path| Named { line, path }));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Reads a use tree (or a path in code) from `j`, after `prefix::`; pushes each full path it
/// names to `out` and returns where it ends. Groups (`{a, b::{c, d}}`) may span lines.
fn tree(
    toks: &[(usize, Tok)],
    mut j: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let kind = |j: usize| toks.get(j).map(|(_, t)| t);
    loop {
        match kind(j) {
            Some(Tok::Ident(s)) if s == "self" => {
                out.push(prefix);
                return j + 1;
            }
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                j += 1;
                if kind(j) == Some(&Tok::Colons) {
                    j += 1;
                    continue;
                }
                out.push(prefix);
                return j;
            }
            Some(Tok::Open) => {
                j += 1;
                loop {
                    match kind(j) {
                        None => return j,
                        Some(Tok::Close) => return j + 1,
                        Some(Tok::Comma) => j += 1,
                        Some(_) => {
                            let next = tree(toks, j, prefix.clone(), out);
                            j = next.max(j + 1);
                            // `as name` and the like, up to the next item.
                            while !matches!(kind(j), None | Some(Tok::Comma | Tok::Close)) {
                                j += 1;
                            }
                        }
                    }
                }
            }
            Some(Tok::Star) => {
                out.push(prefix);
                return j + 1;
            }
            _ => {
                out.push(prefix);
                return j;
            }
        }
    }
}

/// The module path of a file under `src` (`auth/oidc/mod.rs` -> `["auth", "oidc"]`).
pub fn module_of(relative: &str) -> Vec<String> {
    let trimmed = relative.trim_end_matches(".rs");
    let mut parts: Vec<String> = trimmed.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The room holding `path`: the one with the longest held path that begins it.
pub fn room_of<'t>(path: &[String], rooms: &'t [Room]) -> Option<&'t Room> {
    rooms
        .iter()
        .flat_map(|r| r.held().iter().map(move |h| (r, *h)))
        .filter(|(_, held)| {
            let held: Vec<&str> = held.split("::").collect();
            held.len() <= path.len() && held.iter().zip(path).all(|(h, p)| *h == p)
        })
        .max_by_key(|(_, held)| held.split("::").count())
        .map(|(r, _)| r)
}

/// Whether `path` begins with `prefix` (`"tools::mcp"`).
fn starts_with(path: &[String], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split("::").collect();
    prefix.len() <= path.len() && prefix.iter().zip(path).all(|(a, b)| *a == b)
}

/// Where the files (path under `src`, text) break the table: `file:line: message`.
/// `private` lists paths only their own top-level module may name.
pub fn check(files: &[(String, String)], rooms: &[Room], private: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in files {
        let root = file == "lib.rs" || file == "main.rs";
        if root || file.ends_with("_tests.rs") || file.starts_with("layering_tests") {
            continue;
        }
        let module = module_of(file);
        let Some(own) = room_of(&module, rooms) else {
            found.push(format!("{file}: in no room of the table: add its room"));
            continue;
        };
        let scanned = scan(text, &module);
        for Named { line, path } in &scanned.named {
            let shown = path.join("::");
            let Some(used) = room_of(path, rooms) else {
                found.push(format!(
                    "{file}:{line}: `crate::{shown}` is in no room of the table"
                ));
                continue;
            };
            let top = module.first().map_or("", String::as_str);
            for p in private {
                if starts_with(path, p) && p.split("::").next() != Some(top) {
                    found.push(format!(
                        "{file}:{line}: `{p}` is its own room's, not `{}`'s",
                        own.name
                    ));
                }
            }
            let named_item = own.names.iter().any(|n| starts_with(path, n));
            if used.name != own.name && !own.uses.contains(&used.name) && !named_item {
                found.push(format!(
                    "{file}:{line}: `{}` uses `{}` (crate::{shown})",
                    own.name, used.name
                ));
            }
        }
        if !own.http {
            for line in &scanned.actix_web {
                found.push(format!("{file}:{line}: `{}` uses actix_web", own.name));
            }
        }
    }
    found
}
