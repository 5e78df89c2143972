//! The title call: the request that asks a model for a conversation's title, how its answer
//! is cleaned, and the title the offline demo model makes.

use super::{ChatMessage, ChatRequest, Role, ToolChoice};

/// The system message of a title request (the demo model recognises it by this text).
pub const TITLE_INSTRUCTIONS: &str = "You name conversations. Reply with a short title (at \
most six words) that says what the conversation below is about, in the language of the \
user's message. Reply with the title only: no quotes, no trailing period, no prefix.";

/// Longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 60;
/// Output cap of a title call, in tokens.
pub const TITLE_MAX_TOKENS: u32 = 24;
/// How much of the first question and of the first answer the title call sees.
pub const EXCERPT_CHARS: i32 = 1_500;

const QUESTION_LABEL: &str = "User: ";
const ANSWER_LABEL: &str = "\n\nAssistant: ";

/// The request for a title from the first question and answer (excerpts).
pub fn request(model: &str, question: &str, answer: &str) -> ChatRequest {
    let mut req = ChatRequest::new(
        model,
        vec![
            ChatMessage::system(TITLE_INSTRUCTIONS),
            ChatMessage::user(format!("{QUESTION_LABEL}{question}{ANSWER_LABEL}{answer}")),
        ],
    );
    req.tool_choice = ToolChoice::None;
    req.max_tokens = Some(TITLE_MAX_TOKENS);
    req
}

/// Whether `req` is a title request (see [`request`]).
pub fn is_title_request(req: &ChatRequest) -> bool {
    req.messages
        .first()
        .is_some_and(|m| m.role == Role::System && m.content == TITLE_INSTRUCTIONS)
}

/// The model's answer as a title: its first line, without quotes, a "Title:" prefix or a
/// final period, whitespace collapsed, at most [`MAX_TITLE_CHARS`] (cut at a word).
/// `None` when nothing is left.
pub fn clean(raw: &str) -> Option<String> {
    let line = raw.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = strip_prefix_ci(line, "title:").unwrap_or(line);
    let quotes: &[char] = &['"', '\'', '`', '*', '#', '“', '”', '‘', '’', '«', '»'];
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| w.trim_matches(quotes))
        .filter(|w| !w.is_empty())
        .collect();
    let mut title = String::new();
    for word in words {
        let next = if title.is_empty() { 0 } else { 1 } + word.chars().count();
        if title.chars().count() + next > MAX_TITLE_CHARS {
            if title.is_empty() {
                title = word.chars().take(MAX_TITLE_CHARS).collect();
            }
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    let title = title
        .trim_end_matches(['.', ':', ';', ','])
        .trim()
        .to_owned();
    let title = crate::domain::pg_safe_text(&title).into_owned();
    (!title.is_empty()).then_some(title)
}

/// [`provisional`] of a first message that may be files alone: without words, its files'
/// workspace paths stand for it, as the browser shows them (`web/js/chat_view.js`).
pub fn provisional_with_files<'a>(
    first_message: &str,
    paths: impl IntoIterator<Item = &'a str>,
) -> String {
    if !first_message.trim().is_empty() {
        return provisional(first_message);
    }
    provisional(&paths.into_iter().collect::<Vec<_>>().join(", "))
}

/// The title a conversation shows from its first message until a generated one replaces it:
/// the message's words, at most [`MAX_TITLE_CHARS`] (cut at a word, with an ellipsis).
pub fn provisional(first_message: &str) -> String {
    let safe = crate::domain::pg_safe_text(first_message);
    let mut title = String::new();
    for word in safe.split_whitespace() {
        let len = title.chars().count();
        let next = usize::from(len > 0) + word.chars().count();
        if len + next > MAX_TITLE_CHARS - 1 {
            if title.is_empty() {
                title = word.chars().take(MAX_TITLE_CHARS - 1).collect();
            }
            title.push('…');
            return title;
        }
        if len > 0 {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        crate::domain::DEFAULT_TITLE.to_owned()
    } else {
        title
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| s[prefix.len()..].trim_start())
}

/// The demo model's title: the first six words of the first question as written
/// (deterministic, no model needed).
pub fn demo_title(req: &ChatRequest) -> String {
    let text = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    let question = text.strip_prefix(QUESTION_LABEL).unwrap_or(text);
    let question = question.split(ANSWER_LABEL).next().unwrap_or(question);
    let words: Vec<&str> = question
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .take(6)
        .collect();
    clean(&words.join(" ")).unwrap_or_else(|| "Demo chat".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_quotes_prefix_and_length() {
        assert_eq!(
            clean("\"Trip to Lisbon.\"").as_deref(),
            Some("Trip to Lisbon")
        );
        assert_eq!(
            clean("Title: **Budget plan**\nmore").as_deref(),
            Some("Budget plan")
        );
        assert_eq!(clean("  \n ").as_deref(), None);
        let long = "word ".repeat(40);
        let t = clean(&long).unwrap_or_default();
        assert!(
            t.chars().count() <= MAX_TITLE_CHARS && t.ends_with("word"),
            "{t}"
        );
        let one = "x".repeat(200);
        assert_eq!(
            clean(&one).map(|t| t.chars().count()),
            Some(MAX_TITLE_CHARS)
        );
    }

    #[test]
    fn provisional_title_is_the_first_words() {
        assert_eq!(provisional("  what is\n 6*7 "), "what is 6*7");
        let long = provisional(&"word ".repeat(30));
        assert!(
            long.ends_with("word…") && long.chars().count() <= MAX_TITLE_CHARS,
            "{long}"
        );
        assert_eq!(provisional(" \n"), "New conversation");
    }

    #[test]
    fn demo_title_is_the_first_words_of_the_question() {
        let req = request(
            "demo",
            "what is 2+3*4? and then some more words",
            "[demo] 14",
        );
        assert!(is_title_request(&req));
        assert_eq!(demo_title(&req), "what is 2+3*4 and then some");
        let req = request("demo", "!!!", "x");
        assert_eq!(demo_title(&req), "Demo chat");
    }
}
