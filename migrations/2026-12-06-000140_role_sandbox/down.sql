DROP TABLE role_sandbox;
