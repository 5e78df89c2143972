//! The collections pinned to a conversation: its owner names them, and a turn of that
//! conversation searches them; only collections the caller may still read are shown or pinned.

use diesel::sql_types::{Array, Bool, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;

use super::collections::{get, Caller, READABLE_BY_1};
use super::KnowledgeError;

/// A collection named to a conversation.
#[derive(Debug, Clone, Serialize, QueryableByName, utoipa::ToSchema)]
pub struct Pinned {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
}

#[derive(QueryableByName)]
struct Owned {
    #[diesel(sql_type = Bool)]
    owned: bool,
}

async fn own_conversation(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    conversation: Uuid,
) -> Result<(), KnowledgeError> {
    let row: Owned = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2) AS owned",
    )
    .bind::<SqlUuid, _>(conversation)
    .bind::<SqlUuid, _>(caller.id)
    .get_result(conn)
    .await?;
    if row.owned {
        Ok(())
    } else {
        Err(KnowledgeError::ConversationNotFound)
    }
}

/// The collections pinned to the caller's conversation that the caller may still read.
pub async fn pins(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    conversation: Uuid,
) -> Result<Vec<Pinned>, KnowledgeError> {
    own_conversation(conn, caller, conversation).await?;
    Ok(diesel::sql_query(format!(
        "SELECT c.id, c.name FROM conversation_collections p JOIN collections c \
           ON c.id = p.collection_id WHERE p.conversation_id = $2 AND {READABLE_BY_1} \
         ORDER BY c.name"
    ))
    .bind::<SqlUuid, _>(caller.id)
    .bind::<SqlUuid, _>(conversation)
    .load(conn)
    .await?)
}

/// Pins exactly `collections` (each one the caller may read) to the conversation.
pub async fn set_pins(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    conversation: Uuid,
    collections: &[Uuid],
) -> Result<Vec<Pinned>, KnowledgeError> {
    own_conversation(conn, caller, conversation).await?;
    if collections.len() > 50 {
        return Err(KnowledgeError::Invalid(
            "at most 50 collections per conversation".into(),
        ));
    }
    for id in collections {
        get(conn, caller, *id).await?;
    }
    diesel::sql_query(
        "WITH gone AS (DELETE FROM conversation_collections WHERE conversation_id = $1 \
                       AND NOT (collection_id = ANY($2))) \
         INSERT INTO conversation_collections (conversation_id, collection_id) \
         SELECT $1, x FROM unnest($2::uuid[]) x ON CONFLICT DO NOTHING",
    )
    .bind::<SqlUuid, _>(conversation)
    .bind::<Array<SqlUuid>, _>(collections)
    .execute(conn)
    .await?;
    pins(conn, caller, conversation).await
}
