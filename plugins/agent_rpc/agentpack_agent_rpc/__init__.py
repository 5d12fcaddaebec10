"""agentpack plugin: the JSON-RPC agent evaluation protocol."""

from agentpack import __version__

__all__ = ["__version__"]
