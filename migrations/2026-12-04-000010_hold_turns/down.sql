DROP INDEX IF EXISTS conversations_active_turn_idx;
DROP INDEX IF EXISTS budget_holds_turn_idx;
ALTER TABLE budget_holds DROP COLUMN turn_id;
