//! `calculator`: evaluates arithmetic expressions with a small hand-written
//! Pratt parser. No code is ever evaluated; the grammar is:
//!
//! ```text
//! expr    := prefix (infix-op expr)*        (precedence climbing)
//! prefix  := number | constant | func "(" args ")" | "(" expr ")" | ("+"|"-") expr
//! infix   := "+" "-" (lowest) < "*" "/" "%" < unary sign < "^" (right-assoc)
//! ```
//!
//! So `-2^2 = -4` and `2^3^2 = 2^9`. Work is bounded: at most
//! [`MAX_EXPRESSION_CHARS`] characters, [`MAX_TOKENS`] tokens and
//! [`MAX_DEPTH`] levels of nesting (parentheses, function calls, signs, `^`).
//!
//! Error policy: malformed input (syntax, unknown identifiers, limits) is
//! [`ToolError::InvalidArguments`] prefixed with `expression:`; mathematical
//! failures (division by zero, overflow, domain errors) are
//! [`ToolError::Failed`].

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::tools::{args_schema, parse_args, truncate_chars, Tool, ToolContext, ToolError};

/// Longest accepted expression, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 1000;
/// Most tokens in one expression.
pub const MAX_TOKENS: usize = 1000;
/// Deepest nesting of parentheses / calls / signs / powers.
pub const MAX_DEPTH: usize = 64;
/// Most arguments to one function call.
const MAX_ARGS: usize = 100;
/// Identifiers are echoed in errors up to this many chars.
const MAX_IDENT_ECHO: usize = 32;

/// Arguments of `calculator`. Unknown fields are rejected.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalculatorArgs {
    /// Arithmetic expression, e.g. "2 * (3 + 4) ^ 2 / sqrt(16)". Supports + - * / % ^,
    /// parentheses, pi, e, and sqrt abs ln log10 log2 exp sin cos tan asin acos atan
    /// floor ceil round min max. Angles are in radians.
    #[schemars(length(max = 1000))]
    pub expression: String,
}

/// The calculator tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculator;

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluate an arithmetic expression exactly as written and return the numeric result. \
         Use it for any non-trivial arithmetic instead of computing in your head."
    }

    fn parameters(&self) -> Value {
        args_schema::<CalculatorArgs>()
    }

    async fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: CalculatorArgs = parse_args(args)?;
        let result = evaluate(&args.expression)?;
        Ok(json!({
            "expression": args.expression,
            "result": number_to_json(result),
        }))
    }
}

/// Evaluate `expression`; see the module docs for the grammar and errors.
pub fn evaluate(expression: &str) -> Result<f64, ToolError> {
    if expression.chars().count() > MAX_EXPRESSION_CHARS {
        return Err(syntax(format!(
            "is longer than {MAX_EXPRESSION_CHARS} characters"
        )));
    }
    let tokens = tokenize(expression)?;
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        depth: 0,
    };
    let value = parser.expr(0)?;
    match parser.peek() {
        None => Ok(value),
        Some(t) => Err(syntax(format!(
            "unexpected {} at position {}",
            t.kind.describe(),
            t.pos
        ))),
    }
}

/// Render `x` as a JSON number: exact integers without a fractional part.
fn number_to_json(x: f64) -> Value {
    const MAX_EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x == 0.0 {
        return json!(0); // also folds -0
    }
    if x.fract() == 0.0 && x.abs() <= MAX_EXACT {
        // Exact: |x| <= 2^53 and integral.
        return json!(x as i64);
    }
    json!(x)
}

fn syntax(msg: String) -> ToolError {
    ToolError::InvalidArguments(format!("expression: {msg}"))
}

fn math(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Num(f64),
    Ident(String),
    Op(char),
    LParen,
    RParen,
    Comma,
}

impl Kind {
    fn describe(&self) -> String {
        match self {
            Kind::Num(n) => format!("number {n}"),
            Kind::Ident(s) => format!("identifier '{}'", truncate_chars(s, MAX_IDENT_ECHO)),
            Kind::Op(c) => format!("'{c}'"),
            Kind::LParen => "'('".to_owned(),
            Kind::RParen => "')'".to_owned(),
            Kind::Comma => "','".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    kind: Kind,
    /// 1-based character position in the expression.
    pos: usize,
}

fn tokenize(src: &str) -> Result<Vec<Token>, ToolError> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if tokens.len() >= MAX_TOKENS {
            return Err(syntax(format!("has more than {MAX_TOKENS} tokens")));
        }
        let kind = if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if i < chars.len() && chars[i] == '.' {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // Exponent only if followed by digits (so "2e" is 2 then identifier e).
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let text: String = chars[start..i].iter().collect();
            let n: f64 = text
                .parse()
                .map_err(|_| syntax(format!("invalid number '{text}' at position {pos}")))?;
            if !n.is_finite() {
                return Err(math(format!("number '{text}' is too large")));
            }
            Kind::Num(n)
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            Kind::Ident(chars[start..i].iter().collect())
        } else {
            i += 1;
            match c {
                '+' | '-' | '*' | '/' | '%' | '^' => Kind::Op(c),
                '×' => Kind::Op('*'),
                '÷' => Kind::Op('/'),
                '−' => Kind::Op('-'),
                '(' => Kind::LParen,
                ')' => Kind::RParen,
                ',' => Kind::Comma,
                _ => {
                    return Err(syntax(format!(
                        "unexpected character {c:?} at position {pos}"
                    )))
                }
            }
        };
        tokens.push(Token { kind, pos });
    }
    Ok(tokens)
}

/// Binding powers: (left, right). Right-associative `^` has right < left.
fn infix_binding_power(op: char) -> Option<(u8, u8)> {
    match op {
        '+' | '-' => Some((10, 11)),
        '*' | '/' | '%' => Some((20, 21)),
        '^' => Some((41, 40)),
        _ => None,
    }
}

/// Binding power of unary `+`/`-`: tighter than `*`, looser than `^`.
const PREFIX_BP: u8 = 30;

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn expect_token(&mut self, want: &Kind, what: &str) -> Result<(), ToolError> {
        match self.next() {
            Some(t) if &t.kind == want => Ok(()),
            Some(t) => Err(syntax(format!(
                "expected {what} but found {} at position {}",
                t.kind.describe(),
                t.pos
            ))),
            None => Err(syntax(format!("expected {what} but the expression ended"))),
        }
    }

    fn enter(&mut self) -> Result<(), ToolError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(format!(
                "is nested more than {MAX_DEPTH} levels deep"
            )));
        }
        Ok(())
    }

    /// Precedence climbing: parse an expression whose operators bind tighter than `min_bp`.
    fn expr(&mut self, min_bp: u8) -> Result<f64, ToolError> {
        self.enter()?;
        let mut lhs = self.prefix()?;
        while let Some(Token {
            kind: Kind::Op(op),
            pos,
        }) = self.peek()
        {
            let (op, pos) = (*op, *pos);
            let Some((l_bp, r_bp)) = infix_binding_power(op) else {
                break;
            };
            if l_bp < min_bp {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(r_bp)?;
            lhs = apply_binary(op, lhs, rhs, pos)?;
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<f64, ToolError> {
        let Some(tok) = self.next().cloned() else {
            return Err(syntax("ended unexpectedly (missing operand)".to_owned()));
        };
        match tok.kind {
            Kind::Num(n) => Ok(n),
            Kind::Op('-') => Ok(-self.expr(PREFIX_BP)?),
            Kind::Op('+') => self.expr(PREFIX_BP),
            Kind::LParen => {
                let v = self.expr(0)?;
                self.expect_token(&Kind::RParen, "')'")?;
                Ok(v)
            }
            Kind::Ident(name) => {
                let lower = name.to_ascii_lowercase();
                if matches!(
                    self.peek(),
                    Some(Token {
                        kind: Kind::LParen,
                        ..
                    })
                ) {
                    self.pos += 1;
                    self.enter()?;
                    let args = self.call_args()?;
                    self.depth -= 1;
                    apply_function(&lower, &name, &args)
                } else {
                    match lower.as_str() {
                        "pi" => Ok(std::f64::consts::PI),
                        "e" => Ok(std::f64::consts::E),
                        _ if is_function(&lower) => Err(syntax(format!(
                            "function '{name}' at position {} must be called with parentheses",
                            tok.pos
                        ))),
                        _ => Err(syntax(format!(
                            "unknown identifier '{}' at position {}",
                            truncate_chars(&name, MAX_IDENT_ECHO),
                            tok.pos
                        ))),
                    }
                }
            }
            other => Err(syntax(format!(
                "unexpected {} at position {}",
                other.describe(),
                tok.pos
            ))),
        }
    }

    /// Arguments after `(` up to and including `)`.
    fn call_args(&mut self) -> Result<Vec<f64>, ToolError> {
        let mut args = Vec::new();
        if matches!(
            self.peek(),
            Some(Token {
                kind: Kind::RParen,
                ..
            })
        ) {
            self.pos += 1;
            return Ok(args);
        }
        loop {
            if args.len() >= MAX_ARGS {
                return Err(syntax(format!(
                    "a function call has more than {MAX_ARGS} arguments"
                )));
            }
            args.push(self.expr(0)?);
            match self.next() {
                Some(Token {
                    kind: Kind::Comma, ..
                }) => continue,
                Some(Token {
                    kind: Kind::RParen, ..
                }) => return Ok(args),
                Some(t) => {
                    return Err(syntax(format!(
                        "expected ',' or ')' but found {} at position {}",
                        t.kind.describe(),
                        t.pos
                    )))
                }
                None => return Err(syntax("expected ')' but the expression ended".to_owned())),
            }
        }
    }
}

fn finite(x: f64, what: &str) -> Result<f64, ToolError> {
    if x.is_finite() {
        Ok(x)
    } else if x.is_nan() {
        Err(math(format!("{what} is undefined (not a real number)")))
    } else {
        Err(math(format!("{what} overflows (result is too large)")))
    }
}

fn apply_binary(op: char, a: f64, b: f64, pos: usize) -> Result<f64, ToolError> {
    let what = format!("'{op}' at position {pos}");
    let r = match op {
        '+' => a + b,
        '-' => a - b,
        '*' => a * b,
        '/' => {
            if b == 0.0 {
                return Err(math(format!("division by zero ({what})")));
            }
            a / b
        }
        '%' => {
            if b == 0.0 {
                return Err(math(format!("modulo by zero ({what})")));
            }
            a % b
        }
        '^' => a.powf(b),
        _ => return Err(syntax(format!("unknown operator {what}"))),
    };
    finite(r, &what)
}

const FUNCTIONS: &[&str] = &[
    "sqrt", "abs", "ln", "log10", "log2", "exp", "sin", "cos", "tan", "asin", "acos", "atan",
    "floor", "ceil", "round", "min", "max",
];

fn is_function(lower: &str) -> bool {
    FUNCTIONS.contains(&lower)
}

fn apply_function(lower: &str, name: &str, args: &[f64]) -> Result<f64, ToolError> {
    let shown = truncate_chars(name, MAX_IDENT_ECHO);
    if !is_function(lower) {
        return Err(syntax(format!("unknown function '{shown}'")));
    }
    if lower == "min" || lower == "max" {
        let Some(first) = args.first() else {
            return Err(syntax(format!("{shown}() needs at least one argument")));
        };
        let pick = |acc: f64, &x: &f64| {
            if lower == "min" {
                acc.min(x)
            } else {
                acc.max(x)
            }
        };
        return Ok(args.iter().skip(1).fold(*first, pick));
    }
    let [x] = args else {
        return Err(syntax(format!(
            "{shown}() takes exactly 1 argument, got {}",
            args.len()
        )));
    };
    let x = *x;
    let domain = |ok: bool, rule: &str| {
        if ok {
            Ok(())
        } else {
            Err(math(format!("{lower}({x}) is undefined: {rule}")))
        }
    };
    let r = match lower {
        "sqrt" => {
            domain(x >= 0.0, "argument must be >= 0")?;
            x.sqrt()
        }
        "abs" => x.abs(),
        "ln" | "log10" | "log2" => {
            domain(x > 0.0, "argument must be > 0")?;
            match lower {
                "ln" => x.ln(),
                "log10" => x.log10(),
                _ => x.log2(),
            }
        }
        "exp" => x.exp(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" | "acos" => {
            domain((-1.0..=1.0).contains(&x), "argument must be in [-1, 1]")?;
            if lower == "asin" {
                x.asin()
            } else {
                x.acos()
            }
        }
        "atan" => x.atan(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        _ => return Err(syntax(format!("unknown function '{shown}'"))),
    };
    finite(r, &format!("{lower}({x})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;
    use std::sync::Arc;

    fn ev(s: &str) -> f64 {
        evaluate(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    fn invalid(s: &str) -> String {
        match evaluate(s) {
            Err(ToolError::InvalidArguments(m)) => m,
            other => panic!("{s}: expected InvalidArguments, got {other:?}"),
        }
    }

    fn failed(s: &str) -> String {
        match evaluate(s) {
            Err(ToolError::Failed(m)) => m,
            other => panic!("{s}: expected Failed, got {other:?}"),
        }
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(ev("1 + 2 * 3"), 7.0);
        assert_eq!(ev("(1 + 2) * 3"), 9.0);
        assert_eq!(ev("10 - 4 - 3"), 3.0);
        assert_eq!(ev("100 / 10 / 5"), 2.0);
        assert_eq!(ev("7 % 3"), 1.0);
        assert_eq!(ev("-7 % 3"), -1.0);
        assert_eq!(ev("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(ev("-2 ^ 2"), -4.0);
        assert_eq!(ev("(-2) ^ 2"), 4.0);
        assert_eq!(ev("2 ^ -1"), 0.5);
        assert_eq!(ev("--3"), 3.0);
        assert_eq!(ev("+3 - -3"), 6.0);
        assert_eq!(ev("2 * -3"), -6.0);
        assert_eq!(ev("3 × 4 ÷ 2 − 1"), 5.0);
    }

    #[test]
    fn numbers() {
        assert_eq!(ev("42"), 42.0);
        assert_eq!(ev("3.25"), 3.25);
        assert_eq!(ev(".5"), 0.5);
        assert_eq!(ev("5."), 5.0);
        assert_eq!(ev("1e3"), 1000.0);
        assert_eq!(ev("1.5E-2"), 0.015);
        assert_eq!(ev("2e+2"), 200.0);
        // No implicit multiplication: "2e" is the number 2 followed by the constant e.
        assert!(invalid("2e").contains("unexpected identifier 'e'"));
    }

    #[test]
    fn functions_and_constants() {
        assert_eq!(ev("sqrt(16)"), 4.0);
        assert_eq!(ev("abs(-3)"), 3.0);
        assert!(close(ev("ln(e)"), 1.0));
        assert_eq!(ev("log10(1000)"), 3.0);
        assert_eq!(ev("log2(1024)"), 10.0);
        assert!(close(ev("exp(1)"), std::f64::consts::E));
        assert!(close(ev("sin(pi / 2)"), 1.0));
        assert!(close(ev("cos(0)"), 1.0));
        assert!(close(ev("tan(pi / 4)"), 1.0));
        assert!(close(ev("asin(1)"), std::f64::consts::FRAC_PI_2));
        assert!(close(ev("acos(1)"), 0.0));
        assert!(close(ev("atan(1)"), std::f64::consts::FRAC_PI_4));
        assert_eq!(ev("floor(2.7) + ceil(2.1) + round(2.5)"), 8.0);
        assert_eq!(ev("min(3, 1, 2)"), 1.0);
        assert_eq!(ev("max(3, 1 + 9, 2)"), 10.0);
        assert_eq!(ev("max(5)"), 5.0);
        assert_eq!(ev("SQRT(4) + PI - pi"), 2.0);
        assert_eq!(ev("sqrt(sqrt(sqrt(256)))"), 2.0);
    }

    #[test]
    fn math_errors_are_failed() {
        assert!(failed("1 / 0").contains("division by zero"));
        assert!(failed("1 / (2 - 2)").contains("division by zero"));
        assert!(failed("5 % 0").contains("modulo by zero"));
        assert!(failed("10^10^10").contains("overflows"));
        assert!(failed("exp(1000)").contains("overflows"));
        assert!(failed("1e308 * 10").contains("overflows"));
        assert!(failed("1e999").contains("too large"));
        assert!(failed("sqrt(-1)").contains(">= 0"));
        assert!(failed("ln(0)").contains("> 0"));
        assert!(failed("asin(2)").contains("[-1, 1]"));
        assert!(failed("(-8) ^ 0.5").contains("undefined"));
    }

    #[test]
    fn syntax_errors_are_invalid_arguments() {
        assert!(invalid("").contains("missing operand"));
        assert!(invalid("   ").contains("missing operand"));
        assert!(invalid("1 +").contains("missing operand"));
        assert!(invalid("(1 + 2").contains("expected ')'"));
        assert!(invalid("1 + 2)").contains("unexpected ')'"));
        assert!(invalid("2 3").contains("unexpected number"));
        assert!(invalid("* 3").contains("unexpected '*'"));
        assert!(invalid("sqrt 4").contains("must be called with parentheses"));
        assert!(invalid("sqrt()").contains("exactly 1 argument"));
        assert!(invalid("sqrt(1, 2)").contains("exactly 1 argument"));
        assert!(invalid("min()").contains("at least one"));
        assert!(invalid("1..2").contains("unexpected number 0.2"));
        assert!(invalid(".").contains("invalid number"));
        assert!(invalid("max(1,)").contains("unexpected ')'"));
        for m in [invalid(""), invalid("foo")] {
            assert!(m.starts_with("expression: "), "{m}");
        }
    }

    #[test]
    fn unknown_identifiers_name_themselves() {
        assert_eq!(
            invalid("x + 1"),
            "expression: unknown identifier 'x' at position 1"
        );
        assert_eq!(invalid("foo(2)"), "expression: unknown function 'foo'");
        let long = "a".repeat(500);
        let m = invalid(&long);
        assert!(m.len() < 120, "{m}");
    }

    #[test]
    fn hostile_input() {
        // Deep nesting: bounded, no stack overflow.
        let deep = format!("{}1{}", "(".repeat(400), ")".repeat(400));
        assert!(invalid(&deep).contains("nested more than 64"));
        let unclosed = "(".repeat(999);
        assert!(invalid(&unclosed).contains("nested"));
        let nested_calls = format!("{}1{}", "sqrt(".repeat(100), ")".repeat(100));
        assert!(invalid(&nested_calls).contains("nested"));
        let signs = "-".repeat(200) + "1";
        assert!(invalid(&signs).contains("nested"));
        let powers = vec!["1"; 200].join("^");
        assert!(invalid(&powers).contains("nested"));
        // Within limits.
        let ok = format!("{}1{}", "(".repeat(30), ")".repeat(30));
        assert_eq!(ev(&ok), 1.0);
        // Long flat expressions are fine up to the limits (no recursion per term).
        let flat = vec!["1"; 400].join("+");
        assert_eq!(ev(&flat), 400.0);
        // Huge expressions.
        assert!(invalid(&"1+".repeat(600)).contains("longer than 1000"));
        let many_tokens = vec!["1"; 501].join("+"); // 1001 tokens, 1001 chars
        assert!(evaluate(&many_tokens).is_err());
        // Garbage, unicode, injection-like.
        assert!(invalid("1; drop table users").contains("';' at position 2"));
        assert!(invalid("__import__('os')").contains("unexpected character '\\''"));
        assert!(invalid("__import__").contains("unknown identifier '__import__'"));
        assert!(invalid("1 + 😀").contains("position 5"));
        assert!(invalid("٣ + 1").contains("unexpected character"));
        assert!(invalid("1 & 2").contains("'&'"));
        assert!(invalid("\u{0}").contains("unexpected character"));
        assert!(invalid("2 ** 3").contains("unexpected '*'"));
        assert!(invalid("$(rm -rf /)").contains("'$'"));
        // Huge number literals.
        assert!(close(ev(&"9".repeat(300)), 1e300));
    }

    #[test]
    fn json_rendering() {
        assert_eq!(number_to_json(4.0), json!(4));
        assert_eq!(number_to_json(-0.0), json!(0));
        assert_eq!(number_to_json(2.5), json!(2.5));
        assert_eq!(number_to_json(1e300), json!(1e300));
        assert_eq!(number_to_json(-3.0), json!(-3));
    }

    fn ctx() -> ToolContext {
        ToolContext {
            user_id: uuid::Uuid::nil(),
            username: "t".into(),
            conversation_id: uuid::Uuid::nil(),
        }
    }

    #[tokio::test]
    async fn tool_call_shape() {
        let v = Calculator
            .call(&ctx(), json!({"expression": "2 * (3 + 4)"}))
            .await
            .unwrap();
        assert_eq!(v, json!({"expression": "2 * (3 + 4)", "result": 14}));
        let v = Calculator
            .call(&ctx(), json!({"expression": "1/4"}))
            .await
            .unwrap();
        assert_eq!(v["result"], json!(0.25));
    }

    #[tokio::test]
    async fn via_registry() {
        let mut r = Registry::new();
        r.register(Arc::new(Calculator)).unwrap();
        let run = |raw: &'static str| {
            let r = r.clone();
            async move { r.execute(&ctx(), "calculator", raw).await }
        };
        let c = run(r#"{"expression": "sqrt(2)^2"}"#).await;
        assert!(c.output.success);

        let c = run(r#"{"expression": 5}"#).await;
        assert_eq!(c.error_code, Some("invalid_arguments"));
        let msg = c.output.error.unwrap();
        assert!(msg.starts_with("invalid arguments: expression: "), "{msg}");

        let c = run(r#"{}"#).await;
        assert_eq!(
            c.output.error.as_deref(),
            Some("invalid arguments: expression: is a required property")
        );

        let c = run(r#"{"expression": "1", "precision": 3}"#).await;
        assert_eq!(
            c.output.error.as_deref(),
            Some("invalid arguments: precision: unknown field (not allowed)")
        );

        let c = run(r#"{"expression": "1/0"}"#).await;
        assert_eq!(c.error_code, Some("failed"));
        assert_eq!(c.outcome, crate::tools::Outcome::Error);

        let long = json!({ "expression": "1+".repeat(800) + "1" }).to_string();
        let c = r.execute(&ctx(), "calculator", &long).await;
        let msg = c.output.error.unwrap();
        assert!(msg.starts_with("invalid arguments: expression: "), "{msg}");
        assert!(msg.len() < 200, "{msg}");
    }
}
