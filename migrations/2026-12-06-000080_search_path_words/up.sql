-- Chat search finds a word inside a path-like token: Postgres's parser keeps "Asia/Tokyo",
-- "docs.rs" or "C:\tmp" as one token, so a search for "Tokyo" missed it. Each message's
-- vector now also holds its text with `/`, `\` and `.` read as spaces (the whole token stays,
-- so searching "Asia/Tokyo" still matches).
ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE messages ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        CASE WHEN role IN ('user', 'assistant') THEN
            to_tsvector('simple', content)
            || to_tsvector('simple', translate(content, '/\.', '   '))
        END
    ) STORED;

-- A copy made with "Continue as copy" says what it was copied from (the sidebar marks it:
-- cut to its first words, a copy looked just like its original). Only a copy of one's own
-- conversation names it; a copy from a link does not name the sharer's conversation.
ALTER TABLE conversations ADD COLUMN forked_from UUID REFERENCES conversations (id) ON DELETE SET NULL;
