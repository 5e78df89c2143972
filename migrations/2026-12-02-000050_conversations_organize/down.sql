DROP INDEX IF EXISTS messages_text_search;
DROP INDEX IF EXISTS conversations_user_list;
ALTER TABLE conversations DROP COLUMN IF EXISTS archived_at, DROP COLUMN IF EXISTS pinned;
