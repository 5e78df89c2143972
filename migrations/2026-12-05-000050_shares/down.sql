DROP TABLE share_views;
DROP TABLE conversation_shares;
ALTER TABLE roles DROP COLUMN can_share_public;
