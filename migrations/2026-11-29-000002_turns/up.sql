-- One agent turn at a time per conversation, across replicas: a turn claims the row.
-- A claim older than the longest allowed turn is stale (its process died) and may be taken over.
ALTER TABLE conversations
    ADD COLUMN active_turn_id UUID,
    ADD COLUMN active_turn_at TIMESTAMPTZ;
