DROP TABLE scim_group_members;
DROP TABLE scim_groups;
DROP TABLE scim_users;
DROP TABLE user_identities;
ALTER TABLE users DROP COLUMN source;
