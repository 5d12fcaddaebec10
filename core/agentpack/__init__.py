"""agentpack: load, validate, query, evaluate and report on packaged-agent formats.

The public API for plugins is what this package and its documented modules
export. Importing ``agentpack`` loads no plugin and no heavy dependency; even
pluggy is imported only when ``hookimpl`` is first used, so code that needs
only a service module (errors, YAML, schemas) starts faster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pluggy import HookimplMarker

    hookimpl: HookimplMarker
    __version__: str

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the one version source of every agentpack distribution
        from pathlib import Path

        version = (Path(__file__).parent / "VERSION").read_text(encoding="utf-8").strip()
        globals()["__version__"] = version
        return version
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker("agentpack")
        globals()["hookimpl"] = marker  # built once; later lookups skip this function
        return marker
    raise AttributeError(f"module 'agentpack' has no attribute {name!r}")
