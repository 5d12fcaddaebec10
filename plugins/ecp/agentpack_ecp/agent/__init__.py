"""A pack served as an agent of the evaluation protocol (``agentpack ecp agent``): ``expert.py`` answers
a step from the pack, ``rpc.py`` speaks JSON-RPC 2.0 over stdio, ``http.py`` over Streamable HTTP."""
