"""agentpack plugin: Dependent Capability Contracts."""

from agentpack import __version__

__all__ = ["__version__"]
