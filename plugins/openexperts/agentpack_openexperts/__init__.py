"""agentpack plugin: openexperts expert packages."""

from agentpack import __version__

__all__ = ["__version__"]
