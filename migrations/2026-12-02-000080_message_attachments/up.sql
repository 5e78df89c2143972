-- The workspace files a user message was sent with: [{"path": "...", "bytes": N}, ...]
-- (NULL when none). The file itself stays in the workspace; this records what was attached
-- and how large it was when sent.
ALTER TABLE messages ADD COLUMN attachments JSONB;
