-- Fair ingestion (issue 41): the next job goes to the uploader with the fewest jobs running
-- and, among those, the one served least recently; `claimed_at` records when a job was last
-- taken. The uploader index also serves the per-user storage quota (a sum of `bytes`).
ALTER TABLE documents ADD COLUMN claimed_at TIMESTAMPTZ;
CREATE INDEX documents_uploaded_by ON documents (uploaded_by);
