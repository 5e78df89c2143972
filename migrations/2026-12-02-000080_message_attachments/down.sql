ALTER TABLE messages DROP COLUMN IF EXISTS attachments;
