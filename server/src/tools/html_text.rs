//! A small, dependency-free HTML → readable text reducer for `http_get`.
//!
//! Drops `script`, `style`, `noscript`, `template`, `svg`, `iframe` and
//! `object` elements and comments, turns block-level tags into line breaks,
//! decodes common character references and collapses whitespace. It is not
//! an HTML parser; it is tolerant of broken markup and runs in linear time.

/// Elements whose content is dropped entirely.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object",
];
/// Elements separated from their surroundings by a blank line.
const PARAGRAPHS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "dl",
    "fieldset",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "title",
    "ul",
];
/// Elements that start or end a line.
const LINES: &[&str] = &[
    "br",
    "dd",
    "div",
    "dt",
    "figcaption",
    "li",
    "tbody",
    "thead",
    "tr",
];
/// Elements separated from their neighbours by a space.
const CELLS: &[&str] = &["td", "th"];

/// Text output with whitespace collapsing: runs of whitespace become one
/// space, block boundaries become line breaks, at most one blank line.
#[derive(Default)]
struct Out {
    text: String,
    pending_space: bool,
}

impl Out {
    fn push_char(&mut self, c: char) {
        if c.is_whitespace() {
            self.pending_space = true;
            return;
        }
        if self.pending_space && !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push(' ');
        }
        self.pending_space = false;
        self.text.push(c);
    }

    /// End the current line; with `blank`, also leave an empty line.
    fn line_break(&mut self, blank: bool) {
        self.pending_space = false;
        if self.text.is_empty() {
            return;
        }
        let wanted = if blank { "\n\n" } else { "\n" };
        while !self.text.ends_with(wanted) {
            self.text.push('\n');
        }
    }

    fn finish(self) -> String {
        self.text.trim().to_owned()
    }
}

/// Readable text of the HTML document `html`.
pub fn html_to_text(html: &str) -> String {
    // ASCII lowercasing keeps byte offsets identical.
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    let mut out = Out::default();
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        if rest.starts_with("<!--") {
            i = find_from(&lower, i + 4, "-->").map_or(html.len(), |j| j + 3);
            continue;
        }
        if bytes[i] == b'<' && is_tag_start(bytes.get(i + 1).copied()) {
            let end = tag_end(bytes, i);
            let (name, closing) = tag_name(&lower[i + 1..end]);
            i = (end + 1).min(html.len());
            if !closing && SKIPPED.contains(&name) {
                let close = format!("</{name}");
                i = find_from(&lower, i, &close)
                    .map_or(html.len(), |j| (tag_end(bytes, j) + 1).min(html.len()));
            } else if PARAGRAPHS.contains(&name) {
                out.line_break(true);
            } else if LINES.contains(&name) {
                out.line_break(false);
            } else if CELLS.contains(&name) {
                out.push_char(' ');
            }
            continue;
        }
        if bytes[i] == b'&' {
            if let Some((decoded, len)) = decode_entity(rest) {
                out.push_char(decoded);
                i += len;
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push_char(c);
        i += c.len_utf8();
    }
    out.finish()
}

fn is_tag_start(next: Option<u8>) -> bool {
    matches!(next, Some(b) if b.is_ascii_alphabetic() || b == b'/' || b == b'!' || b == b'?')
}

fn find_from(haystack: &str, from: usize, needle: &str) -> Option<usize> {
    haystack.get(from..)?.find(needle).map(|j| from + j)
}

/// Index of the `>` closing the tag opened at `start` (quotes respected), or
/// `bytes.len()` if unterminated (never the middle of a multi-byte character).
fn tag_end(bytes: &[u8], start: usize) -> usize {
    let mut quote: Option<u8> = None;
    for (j, &b) in bytes.iter().enumerate().skip(start + 1) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'>') => return j,
            _ => {}
        }
    }
    bytes.len()
}

/// `(name, is_closing)` of the tag body after `<`, lowercased.
fn tag_name(body: &str) -> (&str, bool) {
    let (closing, body) = match body.strip_prefix('/') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let end = body
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(body.len());
    (&body[..end], closing)
}

/// Decode the character reference at the start of `s` (which begins with
/// `&`): `(char, bytes consumed)`, or `None` to keep it literally.
fn decode_entity(s: &str) -> Option<(char, usize)> {
    let semi = s.get(1..s.len().min(12))?.find(';')? + 1;
    let name = &s[1..semi];
    let c = if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        char::from_u32(code)
            .filter(|&c| c != '\0')
            .unwrap_or('\u{fffd}')
    } else {
        named_entity(name)?
    };
    Some((c, semi + 1))
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "bull" => '•',
        "middot" => '·',
        "deg" => '°',
        "times" => '×',
        "divide" => '÷',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_text() {
        let html = r#"<!DOCTYPE html><html><head><title>T</title>
            <style>body { color: red }</style>
            <script>alert("<p>x</p>")</script></head>
            <body><h1>Hello&nbsp;World &amp; friends</h1>
            <!-- a comment <p>hidden</p> -->
            <p>First   paragraph
               spans lines.</p><p>Second &lt;b&gt; &#169; &#x263A; &bogus; AT&T</p>
            <ul><li>one</li><li>two</li></ul>
            <a href="x" title="a > b">link</a> <SCRIPT type=x>evil()</SCRIPT> end
            <table><tr><td>c1</td><td>c2</td></tr></table>
            </body></html>"#;
        let text = html_to_text(html);
        assert_eq!(
            text,
            "T\n\nHello World & friends\n\nFirst paragraph spans lines.\n\n\
             Second <b> © ☺ &bogus; AT&T\n\none\ntwo\n\nlink end\n\nc1 c2"
        );
    }

    #[test]
    fn tolerates_broken_markup() {
        assert_eq!(html_to_text("a <b"), "a");
        assert_eq!(html_to_text("<script>never closed"), "");
        assert_eq!(html_to_text("x < y and 3<4"), "x < y and 3<4");
        assert_eq!(html_to_text("<!-- open"), "");
        assert_eq!(
            html_to_text("&#0; &#99999999; &#xZZ;"),
            "\u{fffd} \u{fffd} &#xZZ;"
        );
        assert_eq!(html_to_text("ünï<br>cödé"), "ünï\ncödé");
        assert_eq!(html_to_text("&"), "&");
    }

    #[test]
    fn unclosed_tags_ending_in_non_ascii_do_not_panic() {
        assert_eq!(html_to_text("x <a title=\"café"), "x");
        assert_eq!(html_to_text("y <a title=café"), "y");
        assert_eq!(html_to_text("<p>z</p><b 日本"), "z");
        assert_eq!(html_to_text("<script>a</scripté"), "");
        assert_eq!(html_to_text("<é"), "<é");
    }
}
