"""agentpack plugin: the JSON-RPC agent evaluation protocol."""

__version__ = "0.1.0"
