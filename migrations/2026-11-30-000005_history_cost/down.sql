CREATE INDEX messages_conversation_seq ON messages (conversation_id, seq);
DROP INDEX messages_conversation_seq_cost;
ALTER TABLE messages DROP COLUMN history_cost;
