-- What a personal API key may do: `chat` (the /v1 routes) always; `files` adds the
-- workspace file tools to its turns. Keys made before scopes existed get `chat` only, as
-- keys were documented never to reach files.
ALTER TABLE api_keys ADD COLUMN scopes TEXT[] NOT NULL DEFAULT '{chat}'
    CHECK ('chat' = ANY (scopes) AND scopes <@ ARRAY['chat', 'files']);
-- A conversation a /v1 call created keeps its key's scopes, so the turn's later steps
-- (after an approval, on any replica) offer and run the same tools. NULL: no key.
ALTER TABLE conversations ADD COLUMN key_scopes TEXT[];
