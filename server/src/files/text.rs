//! Paging through text files: a window of at most `limit` bytes starting at a
//! byte offset, ending at a line break when possible.

use serde::Serialize;

/// One page of a text file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextChunk {
    /// The text of this page.
    pub content: String,
    /// Byte offset where `content` starts (the requested offset, moved
    /// forward to the next character boundary if needed).
    pub offset: u64,
    /// 1-based line number of the first line in `content`.
    pub start_line: u64,
    /// Size of the whole file in bytes.
    pub total_bytes: u64,
    /// Number of lines in the whole file.
    pub total_lines: u64,
    /// Whether the file continues after `content`.
    pub truncated: bool,
    /// Byte offset of the next page when `truncated`.
    pub next_offset: Option<u64>,
}

/// Number of lines in `text` (a final line without `\n` counts).
pub fn count_lines(text: &str) -> u64 {
    let newlines = bytecount(text.as_bytes(), b'\n');
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

fn bytecount(bytes: &[u8], needle: u8) -> u64 {
    bytes.iter().filter(|&&b| b == needle).count() as u64
}

/// The page of `text` starting at byte `offset` holding at most `limit`
/// bytes (at least one character, so paging always makes progress). The page
/// ends just after the last `\n` inside the window if there is one, so lines
/// are only split when a single line is longer than `limit`.
pub fn text_chunk(text: &str, offset: u64, limit: usize) -> TextChunk {
    let len = text.len();
    let mut start = usize::try_from(offset).unwrap_or(usize::MAX).min(len);
    while start < len && !text.is_char_boundary(start) {
        start += 1;
    }
    let end = chunk_end(text, start, limit.max(1));
    let truncated = end < len;
    TextChunk {
        content: text[start..end].to_owned(),
        offset: start as u64,
        start_line: bytecount(&text.as_bytes()[..start], b'\n') + 1,
        total_bytes: len as u64,
        total_lines: count_lines(text),
        truncated,
        next_offset: truncated.then_some(end as u64),
    }
}

fn chunk_end(text: &str, start: usize, limit: usize) -> usize {
    let len = text.len();
    let window_end = start.saturating_add(limit);
    if window_end >= len {
        return len;
    }
    if let Some(nl) = text.as_bytes()[start..window_end]
        .iter()
        .rposition(|&b| b == b'\n')
    {
        return start + nl + 1;
    }
    let mut end = window_end;
    while end > start && !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == start {
        // `limit` is smaller than one character: take that character.
        end = text[start..]
            .chars()
            .next()
            .map_or(len, |c| start + c.len_utf8());
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_counted() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("\n\n"), 2);
    }

    #[test]
    fn whole_file_fits() {
        let c = text_chunk("one\ntwo\n", 0, 100);
        assert_eq!(c.content, "one\ntwo\n");
        assert!(!c.truncated);
        assert_eq!(c.next_offset, None);
        assert_eq!((c.total_lines, c.total_bytes, c.start_line), (2, 8, 1));
    }

    #[test]
    fn pages_end_at_line_breaks_and_cover_everything() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let mut offset = 0;
        let mut rebuilt = String::new();
        let mut pages = 0;
        loop {
            let c = text_chunk(&text, offset, 50);
            assert!(c.content.len() <= 50);
            assert!(c.content.ends_with('\n'));
            assert_eq!(c.offset, offset);
            rebuilt.push_str(&c.content);
            pages += 1;
            match c.next_offset {
                Some(n) => offset = n,
                None => break,
            }
        }
        assert_eq!(rebuilt, text);
        assert!(pages > 10);
        let c = text_chunk(&text, 7, 50);
        assert_eq!(c.start_line, 2);
        assert!(c.content.starts_with("line 2\n"));
    }

    #[test]
    fn long_lines_split_on_char_boundaries() {
        let text = "é".repeat(10); // 20 bytes, one line
        let c = text_chunk(&text, 0, 5);
        assert_eq!(c.content, "éé");
        assert_eq!(c.next_offset, Some(4));
        // An offset inside a character moves forward.
        let c = text_chunk(&text, 1, 4);
        assert_eq!(c.offset, 2);
        assert_eq!(c.content, "éé");
        // A limit smaller than a character still makes progress.
        let c = text_chunk(&text, 0, 1);
        assert_eq!(c.content, "é");
        assert_eq!(c.next_offset, Some(2));
    }

    #[test]
    fn offset_past_end() {
        let c = text_chunk("abc", 99, 10);
        assert_eq!(c.content, "");
        assert_eq!(c.offset, 3);
        assert!(!c.truncated);
        let c = text_chunk("abc", u64::MAX, 10);
        assert_eq!(c.offset, 3);
    }
}
