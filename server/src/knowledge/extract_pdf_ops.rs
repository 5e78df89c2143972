//! Counting the operators of a content stream without parsing it into objects: pdf-extract
//! holds a parsed operation (operands included) for each one and does work for each, so a
//! small file of `(a)Tj` repeated millions of times costs gigabytes and minutes while its
//! bytes stay well within the byte budget. Operators are bounded instead.

use super::pdf_scan::{find, is_regular, is_whitespace, string_end};

/// The operators in `content`: keywords that are neither numbers nor `true`, `false`,
/// `null`. Strings, names, comments and inline image data are skipped.
pub(super) fn operators(content: &[u8]) -> u64 {
    let mut count = 0u64;
    let mut at = 0;
    while let Some(&c) = content.get(at) {
        match c {
            b'%' => {
                at = content
                    .iter()
                    .skip(at)
                    .position(|&c| c == b'\n' || c == b'\r')
                    .map_or(content.len(), |p| at + p);
            }
            b'(' => at = string_end(content, at).unwrap_or(content.len()),
            b'<' if content.get(at + 1) == Some(&b'<') => at += 2,
            b'<' => at = find(content, b">", at).map_or(content.len(), |p| p + 1),
            b'/' => at = token_end(content, at + 1),
            c if !is_regular(c) => at += 1,
            _ => {
                let start = at;
                at = token_end(content, at);
                let token = content.get(start..at).unwrap_or_default();
                if is_operand(token) {
                    continue;
                }
                count += 1;
                if token == b"ID" {
                    at = inline_image_end(content, at);
                }
            }
        }
    }
    count
}

fn token_end(content: &[u8], mut at: usize) -> usize {
    while content.get(at).is_some_and(|&c| is_regular(c)) {
        at += 1;
    }
    at
}

fn is_operand(token: &[u8]) -> bool {
    let number = token.first().is_some_and(|c| b"+-.0123456789".contains(c));
    number || matches!(token, b"true" | b"false" | b"null")
}

/// Past the `EI` that ends inline image data starting at `at` (binary, anything goes).
fn inline_image_end(content: &[u8], mut at: usize) -> usize {
    while let Some(found) = find(content, b"EI", at) {
        at = found + 2;
        let before = found.checked_sub(1).and_then(|i| content.get(i));
        let after = content.get(at);
        if before.is_some_and(|&c| is_whitespace(c)) && after.is_none_or(|&c| !is_regular(c)) {
            return at;
        }
    }
    content.len()
}

#[cfg(test)]
mod tests {
    use super::operators;

    #[test]
    fn operators_are_counted_and_operands_are_not() {
        assert_eq!(
            operators(b"BT /F1 12 Tf (a) Tj (b)Tj [(c) -3 (d)] TJ ET"),
            6
        );
        assert_eq!(operators(b"1 0 0 1 72 720 cm q Q true false null"), 3);
        assert_eq!(operators(b"(Tj Tj \\) Tj) Tj % Tj Tj\n<546a> Tj /Tj Tj"), 3);
        assert_eq!(operators(b"BI /W 2 /H 2 ID \x00Tj Tj EIx\xffEI\nEI Q"), 3);
        assert_eq!(operators(b"(a)' (b)\" T*"), 3);
    }
}
