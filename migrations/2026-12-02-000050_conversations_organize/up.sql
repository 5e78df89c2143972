-- Conversations a user keeps on top (pinned) or puts away (archived: out of the list, still
-- searchable and readable).
ALTER TABLE conversations
    ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN archived_at TIMESTAMPTZ;
-- The sidebar's order: pinned first, then most recently active.
CREATE INDEX conversations_user_list ON conversations (user_id, pinned DESC, updated_at DESC, id DESC)
    WHERE archived_at IS NULL;
-- Full-text search over what people and the assistant wrote ('simple': no language-specific
-- stemming, so every language is searchable word by word). Tool rows are not searched.
CREATE INDEX messages_text_search ON messages USING gin (to_tsvector('simple', content))
    WHERE role IN ('user', 'assistant');
