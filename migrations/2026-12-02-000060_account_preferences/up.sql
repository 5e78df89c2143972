-- Per-user preferences that follow the account to every browser: the colour theme and the
-- model new conversations start with (NULL: the server's default).
ALTER TABLE users
    ADD COLUMN theme TEXT NOT NULL DEFAULT 'system'
        CHECK (theme IN ('system', 'light', 'dark')),
    ADD COLUMN default_model TEXT;
-- A conversation's own instructions, added after the server's system prompt (never in its
-- place); and whether its title is still the default one a generated title may replace
-- (false once the user named it or a title was generated).
ALTER TABLE conversations
    ADD COLUMN system_prompt TEXT,
    ADD COLUMN title_auto BOOLEAN NOT NULL DEFAULT false;
UPDATE conversations SET title_auto = true WHERE title = 'New conversation';
