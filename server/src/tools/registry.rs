//! The tool registry: name -> tool, the specs published to the model, and
//! execution of calls (parse, validate, run with timeout, isolate panics,
//! cap the result size).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::validate::ArgsValidator;
use super::{builtin, truncate_chars, Tool, ToolContext, ToolError, ToolOutput};

/// Default cap on the serialised size of a tool result (16 KiB).
pub const DEFAULT_OUTPUT_CAP_BYTES: usize = 16 * 1024;
/// Raw argument strings longer than this are rejected before parsing (256 KiB).
pub const MAX_ARGUMENT_BYTES: usize = 256 * 1024;
/// Longest accepted tool name (OpenAI-compatible function name rules).
const MAX_TOOL_NAME_LEN: usize = 64;
/// Longest error message forwarded to the model.
const MAX_ERROR_CHARS: usize = 2000;

/// A tool as advertised to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpecView {
    /// Tool name.
    pub name: String,
    /// Tool description.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// How a call ended, for logs, metrics and the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool returned a result.
    Ok,
    /// Unknown tool, invalid arguments, or the tool failed/panicked.
    Error,
    /// The tool exceeded its timeout and was aborted.
    Timeout,
    /// The tool refused the call ([`ToolError::NotPermitted`]).
    Refused,
}

impl Outcome {
    /// Lower-case name (`ok`, `error`, `timeout`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Refused => "refused",
        }
    }
}

/// Everything known about one executed call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutedCall {
    /// The envelope to send back to the model (see [`ToolOutput::to_model_string`]).
    pub output: ToolOutput,
    /// How the call ended.
    pub outcome: Outcome,
    /// [`ToolError::code`] when the call did not succeed.
    pub error_code: Option<&'static str>,
    /// Wall-clock time spent in `execute` (parsing, validation and the call).
    pub duration: Duration,
    /// Size of the serialised result data before truncation (0 on error).
    pub result_bytes: usize,
    /// Whether the result data was cut to the output cap.
    pub truncated: bool,
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A tool with this name is already registered.
    #[error("a tool named '{0}' is already registered")]
    Duplicate(String),
    /// The name is empty, too long or has characters other than `[A-Za-z0-9_-]`.
    #[error("invalid tool name '{0}': use 1-64 characters from [A-Za-z0-9_-]")]
    InvalidName(String),
    /// The tool's parameter schema does not compile.
    #[error("tool '{name}' has an invalid parameter schema: {reason}")]
    InvalidSchema {
        /// Tool name.
        name: String,
        /// Compiler message.
        reason: String,
    },
}

struct Entry {
    tool: Arc<dyn Tool>,
    validator: Arc<ArgsValidator>,
    spec: ToolSpecView,
    /// Characters of `spec.parameters` as JSON, counted once (every turn estimates them).
    schema_chars: usize,
}

#[derive(Clone)]
struct Inner {
    /// Entries are shared between clones: a merge copies pointers, not specs and schemas.
    tools: BTreeMap<String, Arc<Entry>>,
    output_cap: usize,
}

/// Registry of callable tools. Cheap to clone (an `Arc` inside); register
/// tools at start-up, then share clones across requests.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.tools.keys().collect::<Vec<_>>())
            .field("output_cap", &self.inner.output_cap)
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry with the default output cap.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                tools: BTreeMap::new(),
                output_cap: DEFAULT_OUTPUT_CAP_BYTES,
            }),
        }
    }

    /// A registry holding every built-in tool (see [`builtin::all`]).
    pub fn builtin(config: &builtin::BuiltinConfig) -> Result<Self, RegisterError> {
        let mut registry = Self::new();
        for tool in builtin::all(config) {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Set the default cap (bytes of serialised result data) for tools that
    /// do not set [`Tool::output_cap_bytes`].
    pub fn with_output_cap(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.inner).output_cap = bytes;
        self
    }

    /// The default output cap in bytes.
    pub fn output_cap(&self) -> usize {
        self.inner.output_cap
    }

    /// Add a tool; its schema is compiled once here and cached.
    ///
    /// Clones made before this call do not see the new tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let name = tool.name().to_owned();
        let name = name.as_str();
        let valid_name = !name.is_empty()
            && name.len() <= MAX_TOOL_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(RegisterError::InvalidName(name.to_owned()));
        }
        if self.inner.tools.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        let parameters = tool.parameters();
        let validator =
            ArgsValidator::new(&parameters).map_err(|reason| RegisterError::InvalidSchema {
                name: name.to_owned(),
                reason,
            })?;
        let schema_chars = parameters.to_string().chars().count();
        let spec = ToolSpecView {
            name: name.to_owned(),
            description: tool.description().to_owned(),
            parameters,
        };
        Arc::make_mut(&mut self.inner).tools.insert(
            name.to_owned(),
            Arc::new(Entry {
                tool,
                validator: Arc::new(validator),
                spec,
                schema_chars,
            }),
        );
        Ok(())
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.tools.get(name).map(|e| Arc::clone(&e.tool))
    }

    /// Specs of all tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpecView> {
        // BTreeMap iterates in key order.
        self.inner.tools.values().map(|e| e.spec.clone()).collect()
    }

    /// The tools named in `allowed`, in name order, each with the length of its parameter
    /// schema as JSON in characters (for token estimates), without copying anything.
    pub fn allowed_specs<'a>(
        &'a self,
        allowed: &'a [String],
    ) -> impl Iterator<Item = (&'a ToolSpecView, usize)> + 'a {
        self.inner
            .tools
            .values()
            .filter(|e| super::policy::allows(allowed, &e.spec.name))
            .map(|e| (&e.spec, e.schema_chars))
    }

    /// Adds every tool of `other` not already here (MCP tools next to the built-ins); their
    /// compiled schemas are shared, not recompiled. Returns the names that clashed.
    pub fn merge(&mut self, other: &Registry) -> Vec<String> {
        let mut clashes = Vec::new();
        if other.inner.tools.is_empty() {
            return clashes;
        }
        let inner = Arc::make_mut(&mut self.inner);
        for (name, entry) in &other.inner.tools {
            if inner.tools.contains_key(name) {
                clashes.push(name.clone());
            } else {
                inner.tools.insert(name.clone(), Arc::clone(entry));
            }
        }
        clashes
    }

    /// This registry without the tools that need a scope `scopes` lack ([`Tool::key_scope`]):
    /// what a turn of an API key gets.
    pub fn within_key_scopes(&self, scopes: crate::domain::KeyScopes) -> Registry {
        let mut inner = (*self.inner).clone();
        inner
            .tools
            .retain(|_, e| e.tool.key_scope().is_none_or(|s| scopes.allows(s)));
        Registry {
            inner: Arc::new(inner),
        }
    }

    /// Whether `other` is this registry or a clone of it (nothing registered since).
    pub fn same_as(&self, other: &Registry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }
}

#[path = "registry_exec.rs"]
mod exec;

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
