//! `search.strip_personal_data`: before a query leaves the server, e-mail addresses and runs
//! of 12 or more digits (card, account, phone and ID numbers; spaces and dashes inside a run
//! count as part of it) are removed. The audit row keeps what was sent.

/// `query` without e-mail addresses and long digit runs, and whether anything was removed.
pub fn strip(query: &str) -> (String, bool) {
    let mut words = Vec::new();
    let mut changed = false;
    for word in query.split_whitespace() {
        if looks_like_email(word) {
            changed = true;
            continue;
        }
        words.push(word);
    }
    let joined = words.join(" ");
    let (without_digits, cut) = strip_digit_runs(&joined);
    let cleaned = without_digits
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (cleaned, changed || cut)
}

fn looks_like_email(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_alphanumeric());
    match w.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// Removes runs of 12+ digits, where single spaces or dashes between digits do not break a
/// run (`4111 1111 1111 1111`, `+44-20-7946-0958-12`).
fn strip_digit_runs(text: &str) -> (String, bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = 0;
        let mut end = i;
        while end < chars.len() {
            if chars[end].is_ascii_digit() {
                digits += 1;
                end += 1;
            } else if matches!(chars[end], ' ' | '-')
                && chars.get(end + 1).is_some_and(char::is_ascii_digit)
            {
                end += 1;
            } else {
                break;
            }
        }
        if digits >= 12 {
            changed = true;
        } else {
            out.extend(&chars[start..end]);
        }
        i = end;
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn emails_and_long_digit_runs_go_short_numbers_stay() {
        assert_eq!(
            strip("refund for jane.doe@example.com card 4111 1111 1111 1111 in 2024"),
            ("refund for card in 2024".to_owned(), true)
        );
        assert_eq!(
            strip("order 123456789012 status"),
            ("order status".to_owned(), true)
        );
        assert_eq!(
            strip("rust 1.80 release notes 12345"),
            ("rust 1.80 release notes 12345".to_owned(), false)
        );
        assert_eq!(
            strip("@home user@ x@y"),
            ("@home user@ x@y".to_owned(), false)
        );
    }
}
