-- The least a message can cost in the model's context window, in estimated tokens (see
-- `list_recent` in server/src/db/models/message.rs), so that a turn reads only as much of a
-- long conversation as its window could hold. NULL, for messages stored before this column,
-- counts as nothing: those are always read.
ALTER TABLE messages ADD COLUMN history_cost INTEGER;
-- The cut is found from the index alone.
CREATE INDEX messages_conversation_seq_cost ON messages (conversation_id, seq) INCLUDE (history_cost);
DROP INDEX messages_conversation_seq;
