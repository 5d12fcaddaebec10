"""agentpack plugin: Dependent Capability Contracts."""

__version__ = "0.1.0"
