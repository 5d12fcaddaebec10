"""agentpack plugin: Expert Context Packs (ECP v1)."""

from agentpack import __version__

__all__ = ["__version__"]
