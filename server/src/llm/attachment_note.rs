//! How the files attached to a user message are announced to the model: a note after the
//! message's text that names each file in the user's workspace and its size, so that the
//! model reads them with its file tools (the files themselves are never pasted into the
//! prompt: they may be large, and the tools page through them). The demo model reads the
//! note back ([`parse`]).

/// The note's first line; each file follows on its own line as `- path (size)`.
pub const HEADER: &str = "Attached files in your workspace (read them with your file tools):";

/// `text` followed by the note naming `files` (`(path, bytes)`); `text` alone when none.
pub fn append<'a>(text: &str, files: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    let mut out = text.to_owned();
    let mut first = true;
    for (path, bytes) in files {
        if first {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(HEADER);
            first = false;
        }
        out.push_str("\n- ");
        out.push_str(path);
        out.push_str(" (");
        out.push_str(&human_bytes(bytes));
        out.push(')');
    }
    out
}

/// The paths a message's note names, in order (none when it has no note). Workspace paths
/// hold no line breaks, so each line names one file whatever characters its path has.
pub fn parse(text: &str) -> Vec<&str> {
    let Some(at) = text.rfind(HEADER) else {
        return Vec::new();
    };
    text[at + HEADER.len()..]
        .lines()
        .skip_while(|l| l.is_empty())
        .map_while(|l| l.strip_prefix("- "))
        .filter_map(|l| l.rfind(" (").map(|i| &l[..i]))
        .collect()
}

/// A size as people read it: `12 bytes`, `1.2 KB`, `3.4 MB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} {}", if n == 1 { "byte" } else { "bytes" });
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_each_file_and_reads_back() {
        let text = append(
            "What is in these?",
            [("notes.txt", 1229), ("data/q (2).csv", 12)],
        );
        assert_eq!(
            text,
            "What is in these?\n\nAttached files in your workspace (read them with your file \
             tools):\n- notes.txt (1.2 KB)\n- data/q (2).csv (12 bytes)"
        );
        assert_eq!(parse(&text), ["notes.txt", "data/q (2).csv"]);
    }

    #[test]
    fn no_files_no_note() {
        assert_eq!(append("hi", []), "hi");
        assert!(parse("hi - a (1 byte)").is_empty());
        assert_eq!(append("", [("a", 1)]), format!("{HEADER}\n- a (1 byte)"));
    }
}
