-- Search costs what the searcher's own messages cost, never what everyone's do. The global
-- GIN index let Postgres pre-filter a phrase across every user's messages and recheck each
-- candidate before the owner filter applied (one search of 16 MB took 96 s, and its timing
-- told how many messages anywhere held a word pair). Search now walks the owner's
-- conversations (conversations_user_recent) and their messages (messages_conversation_seq),
-- matching a tsvector stored with each message, so no plan can start from other users'
-- rows. Tool rows are not searched (NULL).
DROP INDEX IF EXISTS messages_text_search;
ALTER TABLE messages ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (
        CASE WHEN role IN ('user', 'assistant') THEN to_tsvector('simple', content) END
    ) STORED;
