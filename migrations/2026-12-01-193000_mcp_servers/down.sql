DROP TABLE mcp_servers;
