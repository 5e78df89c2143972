//! What a personal API key may do, chosen when it is made: `chat` (the `/v1` routes) always;
//! `files` adds the workspace file tools to its turns. An access token is not limited by
//! scopes (its bearer is signed in).

/// The scope every key has.
pub const CHAT: &str = "chat";
/// The workspace file tools in the key's `/v1` turns.
pub const FILES: &str = "files";
/// Every scope, in the order they are shown.
pub const ALL: [&str; 2] = [CHAT, FILES];

/// A key's scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyScopes {
    pub files: bool,
}

impl KeyScopes {
    /// How many scopes exist (a request naming more repeats one).
    pub const ALL_COUNT: usize = ALL.len();

    /// Scopes as a client asked for them; `chat` is implied. The error names the first
    /// scope that does not exist.
    pub fn requested(names: &[String]) -> Result<Self, String> {
        if let Some(unknown) = names.iter().find(|n| !ALL.contains(&n.as_str())) {
            return Err(unknown.clone());
        }
        Ok(Self {
            files: names.iter().any(|n| n == FILES),
        })
    }

    /// Scopes as stored (the database checks they are known).
    pub fn stored(names: &[String]) -> Self {
        Self {
            files: names.iter().any(|n| n == FILES),
        }
    }

    /// The stored form.
    pub fn names(self) -> Vec<String> {
        let mut out = vec![CHAT.to_owned()];
        if self.files {
            out.push(FILES.to_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_is_implied_and_unknown_scopes_are_named() {
        let none = KeyScopes::requested(&[]);
        assert_eq!(none, Ok(KeyScopes { files: false }));
        let files = KeyScopes::requested(&["files".to_owned()]);
        assert_eq!(
            files.map(KeyScopes::names),
            Ok(vec!["chat".into(), "files".into()])
        );
        assert_eq!(
            KeyScopes::requested(&["chat".to_owned(), "admin".to_owned()]),
            Err("admin".to_owned())
        );
    }
}
