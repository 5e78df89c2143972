-- Web search (DESIGN §17): the providers the admin API added (on top of the configuration's
-- `[[search_providers]]`), each role's search rules, and one audit row per query sent with
-- the results it gave (their ids are the `[W…]` refs an answer cites).

-- A provider's key is write-only: sealed (`api_key_sealed`) when `auth.secret_key` is set,
-- in clear (`api_key`) otherwise, like the catalogue's provider keys.
CREATE TABLE search_providers (
    name            TEXT PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
    kind            TEXT NOT NULL CHECK (kind IN ('searxng', 'brave', 'tavily')),
    base_url        TEXT NOT NULL,
    api_key         TEXT,
    api_key_sealed  TEXT,
    price_per_query NUMERIC(20, 9) NOT NULL DEFAULT 0 CHECK (price_per_query >= 0),
    currency        TEXT NOT NULL DEFAULT 'USD',
    timeout_secs    INTEGER NOT NULL DEFAULT 10 CHECK (timeout_secs BETWEEN 1 AND 120),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Which providers a role's users may search with (empty: every one) and which sites they may
-- see and fetch (a domain covers its subdomains; empty allow list: every site not denied).
CREATE TABLE role_search (
    role            TEXT PRIMARY KEY REFERENCES roles (name) ON DELETE CASCADE,
    providers       TEXT[] NOT NULL DEFAULT '{}',
    allow_domains   TEXT[] NOT NULL DEFAULT '{}',
    deny_domains    TEXT[] NOT NULL DEFAULT '{}',
    -- Most queries one user of the role sends per day (NULL: `search.queries_per_user_per_day`).
    queries_per_day INTEGER CHECK (queries_per_day >= 0),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per query sent to a provider (a failover sends it again: another row), or refused
-- before it left. `query_sent` is what left the server, after personal data was stripped.
CREATE TABLE web_search_queries (
    id              BIGSERIAL PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id UUID,
    provider        TEXT NOT NULL,
    query_sent      TEXT NOT NULL,
    stripped        BOOLEAN NOT NULL DEFAULT false,
    outcome         TEXT NOT NULL,
    error           TEXT,
    result_urls     TEXT[] NOT NULL DEFAULT '{}',
    cost            NUMERIC(20, 9) NOT NULL DEFAULT 0,
    currency        TEXT NOT NULL DEFAULT 'USD',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX web_search_queries_user ON web_search_queries (user_id, created_at);
CREATE INDEX web_search_queries_time ON web_search_queries (created_at DESC);

-- The results a query returned, as the model saw them: `W{id}` is the ref it cites.
CREATE TABLE web_search_results (
    id        BIGSERIAL PRIMARY KEY,
    query_id  BIGINT NOT NULL REFERENCES web_search_queries (id) ON DELETE CASCADE,
    user_id   UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url       TEXT NOT NULL,
    title     TEXT NOT NULL,
    snippet   TEXT NOT NULL,
    published TEXT,
    provider  TEXT NOT NULL
);
CREATE INDEX web_search_results_query ON web_search_results (query_id);
