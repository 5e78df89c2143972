//! Validation of user-supplied workspace paths.
//!
//! This is the *first* line of defence only: it rejects anything that is not
//! a plain relative path so that error messages are clear. Containment itself
//! is enforced by opening everything through a `cap_std::fs::Dir` (see
//! [`super::LocalDir`]), which refuses `..` escapes, absolute paths and
//! symlinks leading outside the user's directory.

use std::fmt;
use std::path::{Path, PathBuf};

/// Longest accepted path component, in bytes.
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Longest accepted path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Most components (directories plus the file name) in a path. The workspace walk that
/// lists files and counts the quota sees exactly this deep, so nothing can be stored where
/// usage would not count it.
pub const MAX_COMPONENTS: usize = 32;
/// Path fragments echoed in error messages are cut to this many characters.
const MAX_ECHO_CHARS: usize = 120;

/// A validated, normalised workspace path: relative, `/`-separated, at least
/// one component, no `.`/`..`/empty components, no NUL, control characters
/// or backslashes, at most [`MAX_COMPONENT_BYTES`] per component,
/// [`MAX_COMPONENTS`] components and [`MAX_PATH_BYTES`] in total.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Validate `raw`. A single trailing `/` is not accepted (paths name
    /// files); surrounding whitespace is kept and therefore rejected if it
    /// makes a component invalid. On failure returns a message that quotes
    /// (a shortened copy of) the offending input and never a server path.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let shown = quote(raw);
        if raw.is_empty() {
            return Err("path is empty".to_owned());
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(format!(
                "path {shown} is too long ({} bytes, limit {MAX_PATH_BYTES})",
                raw.len()
            ));
        }
        if raw.contains('\0') {
            return Err(format!("path {shown} contains a NUL byte"));
        }
        if raw.chars().any(char::is_control) {
            return Err(format!("path {shown} contains control characters"));
        }
        if raw.contains('\\') {
            return Err(format!(
                "path {shown} contains a backslash; use '/' to separate directories"
            ));
        }
        if raw.starts_with('/') {
            return Err(format!(
                "path {shown} is absolute; use a path relative to your workspace"
            ));
        }
        if raw.split('/').count() > MAX_COMPONENTS {
            return Err(format!(
                "path {shown} is nested too deeply (more than {MAX_COMPONENTS} components)"
            ));
        }
        for component in raw.split('/') {
            match component {
                "" => {
                    return Err(format!(
                        "path {shown} has an empty component (leading, trailing or double '/')"
                    ))
                }
                "." | ".." => {
                    return Err(format!(
                        "path {shown} contains a '{component}' component, which is not allowed"
                    ))
                }
                c if c.len() > MAX_COMPONENT_BYTES => {
                    return Err(format!(
                        "path {shown} has a component longer than {MAX_COMPONENT_BYTES} bytes"
                    ))
                }
                c if c.trim() != c || c.trim().is_empty() => {
                    return Err(format!(
                        "path {shown} has a component with leading or trailing whitespace"
                    ))
                }
                _ => {}
            }
        }
        Ok(Self(raw.to_owned()))
    }

    /// The path as a `/`-separated string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as a relative filesystem path (for `cap_std::fs::Dir`).
    pub fn to_path(&self) -> PathBuf {
        PathBuf::from(&self.0)
    }

    /// The parent directory, if the path has more than one component.
    pub fn parent(&self) -> Option<&Path> {
        Path::new(&self.0)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `'raw'`, shortened and with control characters escaped, for messages.
pub fn quote(raw: &str) -> String {
    let cleaned: String = raw.chars().flat_map(char::escape_debug).collect();
    format!("'{}'", truncate_chars(&cleaned, MAX_ECHO_CHARS))
}

/// First `max` chars of `s`, with an ellipsis when something was cut.
fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &s[..idx]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_relative_paths() {
        for ok in [
            "a.txt",
            "dir/sub/file.csv",
            ".env",
            "..hidden",
            "a..b",
            "ünïcödé/ファイル.txt",
            "with space.txt",
        ] {
            let p = WorkspacePath::parse(ok).unwrap();
            assert_eq!(p.as_str(), ok);
        }
        let p = WorkspacePath::parse("a/b/c").unwrap();
        assert_eq!(p.parent(), Some(Path::new("a/b")));
        assert_eq!(WorkspacePath::parse("c").unwrap().parent(), None);
    }

    #[test]
    fn rejects_hostile_paths() {
        for (bad, needle) in [
            ("", "empty"),
            ("../../etc/passwd", "'..'"),
            ("/etc/passwd", "absolute"),
            ("a/../../b", "'..'"),
            ("a/./b", "'.'"),
            (".", "'.'"),
            ("..", "'..'"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
            ("a\\..\\b", "backslash"),
            ("a//b", "empty component"),
            ("a/", "empty component"),
            (" a", "whitespace"),
            ("a/ /b", "whitespace"),
        ] {
            let err = WorkspacePath::parse(bad).unwrap_err();
            assert!(err.contains(needle), "{bad:?}: {err}");
        }
    }

    #[test]
    fn length_limits() {
        let long_component = "a".repeat(MAX_COMPONENT_BYTES + 1);
        assert!(WorkspacePath::parse(&long_component)
            .unwrap_err()
            .contains("longer than 255"));
        assert!(WorkspacePath::parse(&"a".repeat(MAX_COMPONENT_BYTES)).is_ok());
        let long_path = vec!["abcdefgh"; 200].join("/");
        let err = WorkspacePath::parse(&long_path).unwrap_err();
        assert!(err.contains("too long"), "{err}");
        // Echoed fragments are bounded.
        assert!(err.len() < 300, "{err}");
        let deep = vec!["d"; MAX_COMPONENTS].join("/");
        assert!(WorkspacePath::parse(&deep).is_ok());
        let deeper = format!("{deep}/f");
        let err = WorkspacePath::parse(&deeper).unwrap_err();
        assert!(err.contains("nested too deeply"), "{err}");
    }

    #[test]
    fn quote_escapes_controls() {
        assert_eq!(quote("a\0b"), "'a\\0b'");
    }
}
