//! `search_knowledge`: the agent's way into the team's documents. A tool like any other
//! (role allowlists, approvals, audit rows and spans apply through the registry); what it
//! finds is bounded by the caller's grants inside the search's SQL, and by the collections
//! the conversation pinned unless the model names others it may read.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use diesel::sql_types::Uuid as SqlUuid;
use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::{search, Knowledge, KnowledgeError};
use crate::tools::{args_schema, parse_args, Tool, ToolContext, ToolError};

/// The tool's name (roles list it).
pub const NAME: &str = "search_knowledge";
/// Most passages one call returns.
const MAX_K: usize = 20;
/// Characters of a passage shown to the model.
const MAX_PASSAGE_CHARS: usize = 1500;

/// Arguments of `search_knowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in plain words (a question or key terms).
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// Only these collections (ids); default: the conversation's pinned collections, or
    /// every collection the user may read.
    #[schemars(length(max = 20))]
    pub collections: Option<Vec<String>>,
    /// How many passages to return (1-20, default 5).
    #[schemars(range(min = 1, max = 20))]
    pub k: Option<usize>,
}

/// Searches the collections the caller may read.
pub struct SearchKnowledge {
    knowledge: Arc<Knowledge>,
}

impl SearchKnowledge {
    pub fn new(knowledge: Arc<Knowledge>) -> Self {
        Self { knowledge }
    }

    /// The tool as the registry holds it.
    pub fn shared(knowledge: &Arc<Knowledge>) -> Arc<Self> {
        Arc::new(Self::new(knowledge.clone()))
    }
}

#[derive(QueryableByName)]
struct PinRow {
    #[diesel(sql_type = SqlUuid)]
    collection_id: Uuid,
}

#[async_trait]
impl Tool for SearchKnowledge {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Search the team's documents (the knowledge collections the user may read) for \
         passages relevant to `query`. Returns passages with their file and a `ref`. \
         Base your answer on them and cite each passage you use with its ref in square \
         brackets, e.g. [K42]."
    }

    fn parameters(&self) -> Value {
        args_schema::<SearchArgs>()
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    fn output_cap_bytes(&self) -> Option<usize> {
        Some(48 * 1024)
    }

    /// It reads the owner's documents: an API key needs the `knowledge` scope.
    fn key_scope(&self) -> Option<crate::domain::KeyScope> {
        Some(crate::domain::KeyScope::Knowledge)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: SearchArgs = parse_args(args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments(
                "query: must not be blank".into(),
            ));
        }
        let k = args.k.unwrap_or(5).clamp(1, MAX_K);
        let only = match args.collections {
            Some(ids) => ids
                .iter()
                .map(|id| {
                    Uuid::parse_str(id).map_err(|_| {
                        ToolError::InvalidArguments(
                            "collections: each must be a collection id (a UUID)".into(),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => self.pinned(ctx.conversation_id).await?,
        };
        let hits = search::search(&self.knowledge, ctx.user_id, &only, query, k)
            .await
            .map_err(|e| match e {
                KnowledgeError::Unavailable(m) => ToolError::Failed(m),
                // The user's budget cannot pay for embedding the query: say so, in words.
                KnowledgeError::Budget { message, .. } => ToolError::Failed(message),
                other => {
                    tracing::warn!(error = %other, "search_knowledge failed");
                    ToolError::Failed("the knowledge search failed; try again".into())
                }
            })?;
        let results: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "ref": format!("K{}", h.chunk_id),
                    "file": h.file,
                    "collection": h.collection,
                    "text": crate::tools::truncate_chars(&h.text, MAX_PASSAGE_CHARS),
                })
            })
            .collect();
        let note = if results.is_empty() {
            "Nothing relevant was found in the collections this user may read."
        } else {
            "Cite the passages you use with their ref in square brackets, e.g. [K42]."
        };
        Ok(json!({"query": query, "results": results, "note": note}))
    }
}

impl SearchKnowledge {
    /// The conversation's pinned collections (none: search everything readable).
    /// The collections a search without `collections` covers (none: all the user may read).
    async fn pinned(&self, conversation: Uuid) -> Result<Vec<Uuid>, ToolError> {
        let unavailable = |_| ToolError::Failed("the knowledge search is unavailable now".into());
        let mut conn = self.knowledge.pool.get().await.map_err(unavailable)?;
        // The conversation's pins and its assistant's collections (searched only where the
        // user may read them: search applies the grants).
        let rows: Vec<PinRow> = diesel::sql_query(
            "SELECT collection_id FROM conversation_collections WHERE conversation_id = $1 \
             UNION \
             SELECT unnest(v.collections) FROM conversations c \
               JOIN assistants a ON a.id = c.assistant_id AND a.retired_at IS NULL \
               JOIN assistant_versions v ON v.assistant_id = a.id AND v.version = a.version \
              WHERE c.id = $1",
        )
        .bind::<SqlUuid, _>(conversation)
        .load(&mut conn)
        .await
        .map_err(|_| ToolError::Failed("the knowledge search is unavailable now".into()))?;
        Ok(rows.into_iter().map(|r| r.collection_id).collect())
    }
}
