"""agentpack: load, validate, query, evaluate and report on packaged-agent formats.

The public API for plugins is what this package and its documented modules
export. Importing ``agentpack`` loads no plugin and no heavy dependency.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("agentpack")
"""Decorator for plugin hook implementations: ``@agentpack.hookimpl``."""

__all__ = ["__version__", "hookimpl"]
