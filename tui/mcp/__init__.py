"""`servedeck mcp`: servedeck's knowledge as MCP tools for agents (the official MCP SDK).

action_tools.py: The MCP tools that change the host or load its server, through the audited paths
answer.py: How every MCP tool answers: a typed result, redacted, or one line saying what failed
http.py: `servedeck mcp --http`: streamable HTTP on 127.0.0.1 only, behind a bearer token
read_tools.py: What the read-only MCP tools answer, each from the builder its CLI command uses
results.py: The typed results of servedeck's MCP tools: the output schema an agent is shown
run.py: Run the MCP server of one profile until its client leaves or a signal stops it
server.py: servedeck's MCP server: its tools, their arguments and bounds, over one open Deck
"""
