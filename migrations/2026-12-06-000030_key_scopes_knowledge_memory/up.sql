-- Two more key scopes (issue 41, finding 4): `knowledge` (search_knowledge reads the owner's
-- documents) and `memory` (remember writes notes the owner's later chats are given). Keys
-- made before keep the scopes they were given, so none of them gains either.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK ('chat' = ANY (scopes) AND scopes <@ ARRAY['chat', 'files', 'knowledge', 'memory']);
