UPDATE roles SET tools = array_remove(tools, 'search_knowledge');
ALTER TABLE messages DROP COLUMN citations;
DROP TABLE conversation_collections;
DROP TABLE chunks;
DROP TABLE documents;
DROP TABLE collection_grants;
DROP TABLE collections;
