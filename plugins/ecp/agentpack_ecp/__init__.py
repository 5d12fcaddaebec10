"""agentpack plugin: Expert Context Packs (ECP v1)."""

__version__ = "0.1.0"
