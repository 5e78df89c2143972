-- Sharing a conversation (DESIGN §14): a link that shows a read-only snapshot of it to the
-- members of this server (`org`) or to anyone holding the link (`public`).

-- Whether a role's users may make public links (anyone on the internet could read them);
-- org links need no permission. Admins may, as they decide who else may.
ALTER TABLE roles ADD COLUMN can_share_public BOOLEAN NOT NULL DEFAULT false;
UPDATE roles SET can_share_public = true WHERE name = 'admin';

CREATE TABLE conversation_shares (
    -- The link's secret: 16 random bytes in base64url (unguessable; the URL is the capability).
    id              TEXT PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{22,64}$'),
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    owner_id        UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope           TEXT NOT NULL CHECK (scope IN ('org', 'public')),
    -- Tool outputs and tool-call arguments are shown as a marker, not as they were.
    redact_tools    BOOLEAN NOT NULL DEFAULT false,
    -- The snapshot: the last message seq when the link was made; later messages never show.
    snapshot_seq    BIGINT NOT NULL,
    expires_at      TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at      TIMESTAMPTZ
);
CREATE INDEX conversation_shares_conversation
    ON conversation_shares (conversation_id, created_at DESC);
CREATE INDEX conversation_shares_live ON conversation_shares (created_at DESC)
    WHERE revoked_at IS NULL;

-- Every view of a shared conversation, one row each: the page read, an attached file
-- downloaded, a copy made. No foreign keys: the trail outlives the link, the conversation
-- and the accounts it names, as the admin trail does.
CREATE TABLE share_views (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    share_id       TEXT NOT NULL,
    -- NULL: an anonymous reader of a public link.
    viewer_id      UUID,
    -- The client's address (the nearest untrusted hop behind trusted proxies).
    viewer_address TEXT,
    action         TEXT NOT NULL DEFAULT 'read' CHECK (action IN ('read', 'file', 'fork')),
    -- The attached file downloaded (`action = 'file'`).
    file           TEXT,
    viewed_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX share_views_share ON share_views (share_id, viewed_at DESC);
