"""agentpack plugin: deterministic skills (skill.yaml, skill/v1)."""

from agentpack import __version__

__all__ = ["__version__"]
