"""A real stdio MCP server (official SDK) offering a CRM lookup, for the MCP binding tests.

Every call is appended to the file named by the CRM_CALLS environment variable.
"""

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-crm")


@server.tool()
def lookup_customer(customer_id: str) -> dict:
    """Fetch a customer by id."""
    with open(os.environ["CRM_CALLS"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"customer_id": customer_id}) + "\n")
    if customer_id == "boom":
        raise ValueError("customer store unavailable")
    return {"id": customer_id, "name": f"MCP {customer_id}", "plan": "mcp", "health": "green"}


if __name__ == "__main__":
    server.run("stdio")
