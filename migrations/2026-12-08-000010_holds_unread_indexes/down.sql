CREATE INDEX money_holds_expiry ON money_holds (expires_at);
CREATE INDEX money_holds_turn ON money_holds (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX budget_holds_expiry ON budget_holds (expires_at);
CREATE INDEX budget_holds_turn_idx ON budget_holds (turn_id) WHERE turn_id IS NOT NULL;
