CREATE INDEX conversations_active_process ON conversations (active_process_id)
    WHERE active_process_id IS NOT NULL;
CREATE INDEX conversations_active_turn_idx ON conversations (active_turn_id)
    WHERE active_turn_id IS NOT NULL;
ALTER TABLE money_holds DROP COLUMN conversation_id;
ALTER TABLE budget_holds DROP COLUMN conversation_id;
