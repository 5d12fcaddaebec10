"""The client the official MCP conformance suite drives for its SEP-2640 client scenarios: agentpack's own host
path, unchanged. The suite appends the server URL and names the scenario in MCP_CONFORMANCE_SCENARIO.

- ``sep-2640-client-no-prefetch``: the prompt is built (``skill-md to-prompt --mcp``): a listing, no file read.
- ``sep-2640-client-verify-*``: every skill is loaded (``validate --mcp``): SKILL.md is read and verified first.
"""

import os
import sys

from agentpack.cli.app import main

url = sys.argv[-1]
server = f"conformance={url}"
if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "sep-2640-client-no-prefetch":
    sys.exit(main(["skill-md", "to-prompt", "--mcp", server]))
sys.exit(main(["validate", "--mcp", server]))
