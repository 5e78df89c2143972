DROP INDEX IF EXISTS budget_holds_process;
ALTER TABLE budget_holds DROP COLUMN IF EXISTS process_id;
DROP INDEX IF EXISTS conversations_active_process;
ALTER TABLE conversations DROP COLUMN IF EXISTS active_process_id;
DROP TABLE IF EXISTS server_processes;
