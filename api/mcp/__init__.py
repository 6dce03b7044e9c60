"""citeline's tools over the Model Context Protocol: the API's operations for coding agents and chat clients.

`tools` (names, descriptions, input schemas), `results` (structured content and a short text citing
`path:line`), `backend` (what the tools call: the API routes' own functions, or a running server),
`server` (the MCP server over a backend) and `http` (`/mcp` inside the API app).
"""
