"""The one version of every agentpack distribution: core/agentpack/VERSION (the plugins' VERSION files link to it)."""

from pathlib import Path

__version__ = (Path(__file__).parent.parent / "VERSION").read_text(encoding="utf-8").strip()
