//! What a personal API key may do, chosen when it is made: `chat` (the `/v1` routes) always;
//! each other scope adds the tools that read or write one kind of its owner's data to its
//! turns — `files` the workspace file tools, `knowledge` the document search, `memory` the
//! notes the owner's later chats are given. An access token is not limited by scopes (its
//! bearer is signed in).

/// The scope every key has.
pub const CHAT: &str = "chat";
/// The workspace file tools in the key's `/v1` turns.
pub const FILES: &str = "files";
/// `search_knowledge`: the collections the owner may read.
pub const KNOWLEDGE: &str = "knowledge";
/// `remember`: notes that reach the owner's later chats.
pub const MEMORY: &str = "memory";
/// Every scope, in the order they are shown.
pub const ALL: [&str; 4] = [CHAT, FILES, KNOWLEDGE, MEMORY];

/// The scope a tool needs in a key's turn (a tool that needs none is open to every key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope {
    Files,
    Knowledge,
    Memory,
}

impl KeyScope {
    /// The scope's name, as keys list it.
    pub fn name(self) -> &'static str {
        match self {
            KeyScope::Files => FILES,
            KeyScope::Knowledge => KNOWLEDGE,
            KeyScope::Memory => MEMORY,
        }
    }
}

/// A key's scopes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyScopes {
    pub files: bool,
    pub knowledge: bool,
    pub memory: bool,
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
        Ok(Self::stored(names))
    }

    /// Scopes as stored (the database checks they are known).
    pub fn stored(names: &[String]) -> Self {
        let has = |s: &str| names.iter().any(|n| n == s);
        Self {
            files: has(FILES),
            knowledge: has(KNOWLEDGE),
            memory: has(MEMORY),
        }
    }

    /// Whether a key with these scopes may use a tool that needs `scope`.
    pub fn allows(self, scope: KeyScope) -> bool {
        match scope {
            KeyScope::Files => self.files,
            KeyScope::Knowledge => self.knowledge,
            KeyScope::Memory => self.memory,
        }
    }

    /// The stored form.
    pub fn names(self) -> Vec<String> {
        let mut out = vec![CHAT.to_owned()];
        for scope in [KeyScope::Files, KeyScope::Knowledge, KeyScope::Memory] {
            if self.allows(scope) {
                out.push(scope.name().to_owned());
            }
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
        assert_eq!(none, Ok(KeyScopes::default()));
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

    #[test]
    fn each_scope_opens_only_its_own_tools() {
        let all: Vec<String> = ALL.iter().map(|s| (*s).to_owned()).collect();
        let every = KeyScopes::stored(&all);
        assert_eq!(every.names(), all);
        let memory = KeyScopes::stored(&["chat".into(), "memory".into()]);
        assert!(memory.allows(KeyScope::Memory));
        assert!(!memory.allows(KeyScope::Knowledge) && !memory.allows(KeyScope::Files));
        assert!(!KeyScopes::default().allows(KeyScope::Knowledge));
    }
}
