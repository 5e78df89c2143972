-- Knowledge: collections of documents the agent searches (DESIGN §13). The `embedding`
-- column of `chunks` and its HNSW indexes need the pgvector extension, which not every
-- database has: the server adds them at start when the extension can be had
-- (server/src/knowledge/schema.rs), and keeps collections off, saying why, when not.

CREATE TABLE collections (
    id          UUID PRIMARY KEY,
    owner_id    UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name        TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    description TEXT NOT NULL DEFAULT '' CHECK (char_length(description) <= 2000),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX collections_owner_name ON collections (owner_id, lower(name));

-- Roles that may read a collection besides its owner (an admin grants them).
CREATE TABLE collection_grants (
    collection_id UUID NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    role          TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE ON UPDATE CASCADE,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, role)
);
CREATE INDEX collection_grants_role ON collection_grants (role);

-- A file of a collection, and its ingestion job: the row is the job (state, progress,
-- lease), so a job survives a restart. `content` is kept so that the file can be indexed
-- again (a retry, a new embedding model); `text` is what extraction made of it, which the
-- chunks' byte offsets and the passages cited point into.
CREATE TABLE documents (
    id              UUID PRIMARY KEY,
    collection_id   UUID NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name            TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    source          TEXT NOT NULL CHECK (source IN ('upload', 'workspace')),
    workspace_path  TEXT,
    -- Whose budget the embedding tokens are charged to.
    uploaded_by     UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    content         BYTEA NOT NULL,
    content_sha256  TEXT NOT NULL,
    bytes           BIGINT NOT NULL,
    text            TEXT,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'extracting', 'embedding', 'ready', 'failed')),
    progress        REAL NOT NULL DEFAULT 0,
    error           TEXT,
    error_code      TEXT,
    -- The version being built; search sees `live_generation` only, so a file is replaced
    -- at once when its new version is ready, and nothing half-indexed is ever found.
    generation      INT NOT NULL DEFAULT 1,
    live_generation INT,
    chunk_count     INT NOT NULL DEFAULT 0,
    embedding_model TEXT,
    -- The model the job in progress embeds with.
    target_model    TEXT NOT NULL,
    lease_owner     UUID,
    lease_until     TIMESTAMPTZ,
    attempts        INT NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (collection_id, name)
);
CREATE INDEX documents_pending ON documents (updated_at)
    WHERE state IN ('queued', 'extracting', 'embedding');

CREATE TABLE chunks (
    id              BIGSERIAL PRIMARY KEY,
    document_id     UUID NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    collection_id   UUID NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    generation      INT NOT NULL,
    ord             INT NOT NULL,
    byte_start      INT NOT NULL,
    byte_end        INT NOT NULL,
    text            TEXT NOT NULL,
    tsv             TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    embedding_model TEXT NOT NULL,
    -- Set once the chunk is embedded (its vector's length).
    dims            INT,
    UNIQUE (document_id, generation, ord)
);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_collection ON chunks (collection_id);

-- Collections a conversation searches by default.
CREATE TABLE conversation_collections (
    conversation_id UUID NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    collection_id   UUID NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    PRIMARY KEY (conversation_id, collection_id)
);

-- The passages an assistant message cites: [{marker, document_id, collection_id, file, byte_start, byte_end}].
ALTER TABLE messages ADD COLUMN citations JSONB;

-- The built-in roles may search knowledge (what each finds is still only what it was granted).
UPDATE roles SET tools = array_append(tools, 'search_knowledge')
 WHERE name IN ('admin', 'member') AND NOT ('search_knowledge' = ANY(tools));
