//! Stage one of the PDF guard, on the raw bytes, before lopdf parses anything: lopdf inflates
//! object streams and cross-reference streams while it loads, without any bound, so a bomb
//! there would go off before any check on the loaded document. Every `obj <<…>> stream`
//! in the file is found here, its dictionary read with lopdf's own grammar, and its content
//! decoded with the bounded decoders, against one budget for the whole file.

use lopdf::content::Content;
use lopdf::{Dictionary, Object};

use super::pdf_decode::decode_stream;
use super::ExtractError;

/// PDF whitespace, as lopdf's parser defines it.
pub(super) fn is_whitespace(c: u8) -> bool {
    b" \t\n\r\0\x0C".contains(&c)
}

/// Part of a name, number or keyword (neither whitespace nor a delimiter).
pub(super) fn is_regular(c: u8) -> bool {
    !is_whitespace(c) && !b"()<>[]{}/%".contains(&c)
}

/// The first position of `needle` in `hay` at or after `from`.
pub(super) fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let rest = hay.get(from..)?;
    rest.windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Refuses the file when its streams would decode to more than `limit` bytes in total.
pub(super) fn check_streams(bytes: &[u8], limit: usize) -> Result<(), ExtractError> {
    // Dictionaries are re-read from every `obj` found, including ones inside strings or
    // binary data; bound that work so crafted files cannot make it quadratic.
    let mut reading_left = bytes.len().saturating_mul(4).saturating_add(1 << 20);
    let mut spent = 0usize;
    let mut at = 0;
    while let Some(found) = find(bytes, b"obj", at) {
        at = found + 3;
        if found == 0 || !bytes.get(found - 1).is_some_and(|&c| is_whitespace(c)) {
            continue;
        }
        let start = skip_space(bytes, at);
        if !bytes.get(start..).is_some_and(|r| r.starts_with(b"<<")) {
            continue;
        }
        let scanned = dictionary_end(bytes, start);
        let reached = match scanned {
            Ok(end) | Err(end) => end,
        };
        reading_left = reading_left
            .checked_sub(reached - start)
            .ok_or_else(|| ExtractError::PdfUnreadable("its structure is too tangled".into()))?;
        let Ok(end) = scanned else {
            continue;
        };
        let Some(body_start) = stream_body_start(bytes, end) else {
            continue;
        };
        let Some(dict) = bytes.get(start..end).and_then(parse_dictionary) else {
            continue;
        };
        let body = stream_body(bytes, body_start, &dict);
        let decoded = decode_stream(&dict, body, limit.saturating_sub(spent))
            .map_err(|_| ExtractError::PdfBomb { limit })?;
        spent += decoded.cost;
    }
    Ok(())
}

/// Past whitespace and `%` comments (lopdf's `space`).
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(&c) = bytes.get(at) {
        if is_whitespace(c) {
            at += 1;
        } else if c == b'%' {
            while bytes.get(at).is_some_and(|&c| c != b'\r' && c != b'\n') {
                at += 1;
            }
        } else {
            break;
        }
    }
    at
}

/// The position just after the `>>` closing the dictionary that opens at `start`, skipping
/// over strings, hex strings and comments that may contain `<<` or `>>`. `Err`: how far the
/// scan got before the syntax broke or the file ended.
fn dictionary_end(bytes: &[u8], start: usize) -> Result<usize, usize> {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        let Some(&c) = bytes.get(at) else {
            return Err(bytes.len());
        };
        match (c, bytes.get(at + 1).copied()) {
            (b'<', Some(b'<')) => {
                depth += 1;
                at += 2;
            }
            (b'>', Some(b'>')) => {
                depth = depth.checked_sub(1).ok_or(at)?;
                at += 2;
                if depth == 0 {
                    return Ok(at);
                }
            }
            (b'<', _) => at = find(bytes, b">", at).ok_or(bytes.len())? + 1,
            (b'>', _) => return Err(at),
            (b'(', _) => at = string_end(bytes, at).ok_or(bytes.len())?,
            (b'%', _) => at = skip_space(bytes, at),
            _ => at += 1,
        }
    }
}

/// The position after the literal string opening at `start` (balanced parentheses,
/// backslash escapes).
pub(super) fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        match *bytes.get(at)? {
            b'\\' => at += 2,
            b'(' => {
                depth += 1;
                at += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                at += 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => at += 1,
        }
    }
}

/// Where the data starts when a `stream` keyword follows the dictionary ending at `end`
/// (lopdf: space, `stream`, spaces or tabs, one end of line).
fn stream_body_start(bytes: &[u8], end: usize) -> Option<usize> {
    let mut at = skip_space(bytes, end);
    if !bytes.get(at..)?.starts_with(b"stream") {
        return None;
    }
    at += b"stream".len();
    while bytes.get(at).is_some_and(|&c| c == b' ' || c == b'\t') {
        at += 1;
    }
    let rest = bytes.get(at..)?;
    if rest.starts_with(b"\r\n") {
        Some(at + 2)
    } else if rest.starts_with(b"\n") || rest.starts_with(b"\r") {
        Some(at + 1)
    } else {
        None
    }
}

/// The dictionary `<<…>>` read by lopdf's own grammar: as the only operand of a dummy
/// content-stream operator, since lopdf does not export its object parser.
fn parse_dictionary(text: &[u8]) -> Option<Dictionary> {
    let mut source = text.to_vec();
    source.extend_from_slice(b" Z");
    let content = Content::decode(&source).ok()?;
    let mut operations = content.operations.into_iter();
    let mut operation = operations.next()?;
    if operations.next().is_some() || operation.operator != "Z" || operation.operands.len() != 1 {
        return None;
    }
    match operation.operands.pop()? {
        Object::Dictionary(dict) => Some(dict),
        _ => None,
    }
}

/// The data lopdf would read: `/Length` bytes when that is a plain number in range,
/// otherwise everything to the end of the file (decoders stop at their own end, so this
/// over-reads, never under-reads).
fn stream_body<'a>(bytes: &'a [u8], start: usize, dict: &Dictionary) -> &'a [u8] {
    let rest = bytes.get(start..).unwrap_or_default();
    let length = dict.get(b"Length").and_then(Object::as_i64).ok();
    length
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| rest.get(..n))
        .unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_end_skips_strings_and_hex() {
        let text = b"<< /A (x >> ( ) \\) y) /B <3e3e> /C << /D 1 >> >> stream\n";
        let end = dictionary_end(text, 0).unwrap();
        assert_eq!(&text[end - 2..end], b">>");
        assert_eq!(stream_body_start(text, end), Some(text.len()));
        let dict = parse_dictionary(&text[..end]).unwrap();
        assert_eq!(dict.get(b"A").unwrap().as_str().unwrap(), b"x >> ( ) ) y");
    }

    #[test]
    fn unbalanced_dictionaries_are_not_streams() {
        assert_eq!(dictionary_end(b"<< /A 1 > >>", 0), Err(8));
        assert_eq!(dictionary_end(b"<< /A (1", 0), Err(8));
        assert_eq!(stream_body_start(b" streamX", 0), None);
    }
}
