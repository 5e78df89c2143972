DROP INDEX IF EXISTS documents_uploaded_by;
ALTER TABLE documents DROP COLUMN IF EXISTS claimed_at;
