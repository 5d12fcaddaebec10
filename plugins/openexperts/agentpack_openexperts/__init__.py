"""agentpack plugin: openexperts expert packages."""

__version__ = "0.1.0"
