ALTER TABLE messages DROP COLUMN search_vector;
CREATE INDEX messages_text_search ON messages USING gin (to_tsvector('simple', content))
    WHERE role IN ('user', 'assistant');
