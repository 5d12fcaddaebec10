"""A pack served as an agent of the evaluation protocol (``agentpack ecp agent``): ``expert.py`` answers
a step from the pack; the core's agent SDK (``agentpack.agents``) speaks JSON-RPC over stdio or HTTP."""
