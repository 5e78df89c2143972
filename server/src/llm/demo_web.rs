//! The demo model and web search: "search the web for …" calls `web_search`, and its
//! results are retold briefly with their refs as citations (the addresses are in the sources). Without a configured provider
//! the tool's own error says so, and the demo repeats it.

use serde_json::Value;

/// What "search the web for …" (or "look up … on the web", "web search …") asks for.
pub(super) fn web_target(text: &str) -> Option<String> {
    let t = text.trim();
    let lower = t.to_lowercase();
    const PREFIXES: [&str; 6] = [
        "search the web for ",
        "search the internet for ",
        "search online for ",
        "web search for ",
        "web search ",
        "google ",
    ];
    let rest = PREFIXES
        .iter()
        .find_map(|p| lower.find(p).and_then(|at| t.get(at + p.len()..)))?;
    let query = rest.trim().trim_end_matches(['.', '?', '!']).trim();
    (!query.is_empty()).then(|| query.to_owned())
}

/// `web_search`'s results, each with its title, a short snippet and its ref.
pub(super) fn describe_web(data: &Value) -> Option<String> {
    let results = data.get("results")?.as_array()?;
    if results.is_empty() {
        return Some("The web search found nothing usable for that.".into());
    }
    let lines: Vec<String> = results
        .iter()
        .take(3)
        .filter_map(|r| {
            let title = r.get("title")?.as_str()?;
            let reference = r.get("ref")?.as_str()?;
            let snippet = r.get("snippet").and_then(Value::as_str).unwrap_or("");
            let snippet = super::truncate_chars(snippet, 160);
            // The page's address is in the sources list the citation becomes.
            Some(format!("- {title}: {snippet} [{reference}]"))
        })
        .collect();
    let provider = data
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or("the search provider");
    Some(format!(
        "Here is what I found on the web (via {provider}):\n{}",
        lines.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_query_after_the_phrase() {
        assert_eq!(
            web_target("Please search the web for Rust 1.80 release notes?").as_deref(),
            Some("Rust 1.80 release notes")
        );
        assert_eq!(web_target("search the web for "), None);
        assert_eq!(web_target("what time is it"), None);
    }
}
