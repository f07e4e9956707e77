"""`servedeck mcp`: servedeck's knowledge as MCP tools for agents (the official MCP SDK)."""
