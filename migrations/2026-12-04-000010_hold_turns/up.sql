-- The turn a budget hold was reserved for (NULL: a title generation, or a hold of an older
-- build). The hold sweeper frees a turn's hold once the turn no longer holds its
-- conversation, so a hold whose turn ended without settling it (its end could not be
-- stored) lives at most one sweep interval longer, not the whole hold TTL.
ALTER TABLE budget_holds ADD COLUMN turn_id UUID;
CREATE INDEX budget_holds_turn_idx ON budget_holds (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversations_active_turn_idx ON conversations (active_turn_id)
    WHERE active_turn_id IS NOT NULL;
