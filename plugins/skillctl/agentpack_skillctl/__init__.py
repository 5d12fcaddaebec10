"""agentpack plugin: deterministic skills (skill.yaml, skill/v1)."""

__version__ = "0.1.0"
