-- Providers and models the admin API added to the catalogue, on top of the configuration's.
-- `spec` is the entry as `[[providers]]` / `[[models]]` write it; a provider's `api_key` is
-- in it, write-only (the API shows only whether one is set, the admin trail never has it).
CREATE TABLE catalogue_entries (
    kind       TEXT NOT NULL CHECK (kind IN ('provider', 'model')),
    name       TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    spec       JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name)
);
