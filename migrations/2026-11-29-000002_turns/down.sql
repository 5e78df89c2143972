ALTER TABLE conversations DROP COLUMN active_turn_id, DROP COLUMN active_turn_at;
