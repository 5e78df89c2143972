DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE refresh_tokens;
DROP TABLE users;
DROP TABLE roles;
DROP TABLE server_secrets;
