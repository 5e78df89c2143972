DROP TABLE custom_tools;
DROP TABLE audit_log;
UPDATE roles SET tools = ARRAY['current_time', 'calculator'] WHERE name IN ('admin', 'member');
