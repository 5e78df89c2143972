UPDATE roles SET tools = array_remove(tools, 'remember');
ALTER TABLE users DROP COLUMN memory_enabled;
DROP TABLE memory_notes;
ALTER TABLE conversations DROP COLUMN memory_enabled, DROP COLUMN assistant_id;
DROP TABLE assistant_versions;
DROP TABLE assistants;
