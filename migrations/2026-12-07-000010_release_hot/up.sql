-- A turn's release becomes a HOT update (issue 43): it changes only columns no index holds,
-- so Postgres writes no index entry for it. A conversation's `updated_at` is now when its
-- last turn started (the claim sets it, as the browser's list already does on send), not
-- when that turn ended.
--
-- The two partial indexes on the claim's columns go. The hold sweeper looked conversations
-- up by `active_turn_id`; a hold now names its conversation, so the sweeper reads that row by
-- its key. The reaper looked a dead process's conversations up by `active_process_id`; it
-- now scans for them, which happens only when a process has died.
ALTER TABLE budget_holds ADD COLUMN conversation_id UUID;
ALTER TABLE money_holds ADD COLUMN conversation_id UUID;

-- Holds of turns running now name their conversation (found while the index still exists).
UPDATE budget_holds h SET conversation_id = c.id
  FROM conversations c WHERE h.turn_id IS NOT NULL AND c.active_turn_id = h.turn_id;
UPDATE money_holds h SET conversation_id = c.id
  FROM conversations c WHERE h.turn_id IS NOT NULL AND c.active_turn_id = h.turn_id;

DROP INDEX conversations_active_turn_idx;
DROP INDEX conversations_active_process;
