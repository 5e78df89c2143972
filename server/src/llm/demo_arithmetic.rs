//! The arithmetic the demo model hands to the calculator: the whole expression, functions
//! (`sqrt(144)`) and `pi` included, never a fragment of it; an expression calling a function
//! the calculator does not know is reported instead of half-computed.

/// The calculator's functions the demo passes on (those of `tools::builtin::calculator`
/// taking one argument: `min`/`max` take a list, which the demo does not pick out of text).
const FUNCTIONS: &[&str] = &[
    "sqrt", "abs", "ln", "log10", "log2", "exp", "sin", "cos", "tan", "asin", "acos", "atan",
    "floor", "ceil", "round",
];

/// What the text asks the calculator for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Arithmetic {
    /// The whole expression.
    Expression(String),
    /// An expression around a call of a function the calculator does not know.
    Unknown(String),
}

/// The longest arithmetic expression in `text` (two numbers joined by an operator, or a
/// function of a number).
pub(super) fn arithmetic_in(text: &str) -> Option<Arithmetic> {
    let chars: Vec<char> = text.chars().collect();
    let mut keep = vec![false; chars.len()];
    // Calls of unknown functions (kept in the runs, so that one inside the expression is
    // seen there): the name and where it starts.
    let mut unknown: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect::<String>();
            let lower = word.to_ascii_lowercase();
            let call = chars.get(i) == Some(&'(');
            if call || lower == "pi" {
                keep[start..i].fill(true);
            }
            if call && !FUNCTIONS.contains(&lower.as_str()) {
                unknown.push((word, start));
            }
            continue;
        }
        keep[i] = c.is_ascii_digit()
            || matches!(c, '+' | '-' | '*' | '/' | '^' | '(' | ')' | '%' | '.' | ' ');
        i += 1;
    }
    let mut best: Option<(String, usize, usize)> = None;
    let mut start = 0;
    while start < chars.len() {
        if !keep[start] {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < chars.len() && keep[end] {
            end += 1;
        }
        let run: String = chars[start..end].iter().collect();
        let candidate = run
            .trim()
            .trim_end_matches(['+', '-', '*', '/', '^', '.', ' '])
            .trim_start_matches(['*', '/', '^', '%', ')', '.', ' ']);
        if is_expression(candidate) && best.as_ref().is_none_or(|b| candidate.len() > b.0.len()) {
            best = Some((candidate.to_owned(), start, end));
        }
        start = end;
    }
    let (expression, from, to) = best?;
    match unknown.into_iter().find(|(_, at)| (from..to).contains(at)) {
        Some((name, _)) => Some(Arithmetic::Unknown(name)),
        None => Some(Arithmetic::Expression(expression)),
    }
}

/// At least two operands joined by a binary operator, or a known function applied.
fn is_expression(s: &str) -> bool {
    let mut numbers = 0;
    let mut functions = 0;
    let mut binary_ops = 0;
    let mut prev_operand = false; // last token was a number, a name or ')'
    let mut pending_op = false; // an operator followed an operand
    let mut in_number = false;
    let mut in_name = false;
    for c in s.chars().filter(|c| !c.is_whitespace()) {
        let is_num = c.is_ascii_digit() || c == '.';
        let is_name = c.is_ascii_alphanumeric() && (in_name || c.is_ascii_alphabetic());
        let starts = (is_num && !in_number && !in_name) || (is_name && !in_name) || c == '(';
        if is_name && !in_name {
            functions += 1;
        }
        if is_num && !in_number && !in_name {
            numbers += 1;
        }
        if starts {
            if pending_op {
                binary_ops += 1;
                pending_op = false;
            }
            prev_operand = false;
        }
        in_name = is_name;
        in_number = is_num && !is_name;
        if is_num || is_name || c == ')' {
            prev_operand = true;
        } else if matches!(c, '+' | '-' | '*' | '/' | '^' | '%') && prev_operand {
            pending_op = true;
            prev_operand = false;
        }
    }
    (numbers >= 2 && binary_ops >= 1) || (functions >= 1 && numbers + binary_ops >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(s: &str) -> Option<Arithmetic> {
        Some(Arithmetic::Expression(s.into()))
    }

    #[test]
    fn the_whole_expression_with_its_functions() {
        assert_eq!(
            arithmetic_in("what is (17*23)+sqrt(144)?"),
            expr("(17*23)+sqrt(144)")
        );
        assert_eq!(arithmetic_in("sqrt(16) please"), expr("sqrt(16)"));
        assert_eq!(arithmetic_in("compute 2*pi"), expr("2*pi"));
        assert_eq!(arithmetic_in("what is 2+2*3"), expr("2+2*3"));
        assert_eq!(arithmetic_in("calculate (1+2)/3 please"), expr("(1+2)/3"));
        assert_eq!(arithmetic_in("hello there"), None);
        assert_eq!(arithmetic_in("see page 4"), None);
    }

    #[test]
    fn an_unknown_function_is_named_not_skipped() {
        assert_eq!(
            arithmetic_in("what is (17*23)+cbrt(27)?"),
            Some(Arithmetic::Unknown("cbrt".into()))
        );
        // An unknown call elsewhere in the text does not touch the expression.
        assert_eq!(arithmetic_in("f(x) aside, what is 2+3"), expr("2+3"));
    }
}
