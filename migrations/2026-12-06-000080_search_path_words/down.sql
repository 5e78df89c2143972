ALTER TABLE conversations DROP COLUMN forked_from;
ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE messages ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        CASE WHEN role IN ('user', 'assistant') THEN to_tsvector('simple', content) END
    ) STORED;
