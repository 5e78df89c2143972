UPDATE api_keys SET scopes = array_remove(array_remove(scopes, 'knowledge'), 'memory');
UPDATE conversations SET key_scopes = array_remove(array_remove(key_scopes, 'knowledge'), 'memory')
 WHERE key_scopes IS NOT NULL;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK ('chat' = ANY (scopes) AND scopes <@ ARRAY['chat', 'files']);
