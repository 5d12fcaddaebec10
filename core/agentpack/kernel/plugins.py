"""The plugin manager: hook specs, built-ins, entry points and allow/block lists; the process-wide ``Host``.

Nothing is loaded at import time; ``get_host()`` builds the manager on first use.
Environment variables:

* ``AGENTPACK_PLUGINS``: comma-separated entry-point names to load (empty: none);
* ``AGENTPACK_DISABLE_PLUGINS``: comma-separated entry-point names to skip.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import pluggy

from agentpack.io.console import debug
from agentpack.io.errors import PluginError
from agentpack.kernel import hookspecs
from agentpack.kernel.entrypoints import entry_points
from agentpack.kernel.host import DEFAULT_PLUGINS, ENTRY_POINT_GROUP, Host


def _env_names(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def create_plugin_manager(*, load_entrypoints: bool = True, plugins: tuple[Any, ...] = ()) -> pluggy.PluginManager:
    """Build a fresh plugin manager: hook specs, built-ins, entry points, extra ``plugins``."""
    pm = pluggy.PluginManager("agentpack")
    pm.add_hookspecs(hookspecs)
    for module_name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    if load_entrypoints:
        allow = _env_names("AGENTPACK_PLUGINS")
        block = _env_names("AGENTPACK_DISABLE_PLUGINS") or set()
        for ep in entry_points(ENTRY_POINT_GROUP):
            if (allow is not None and ep.name not in allow) or ep.name in block:
                continue
            if pm.has_plugin(ep.name):
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken install must say which plugin
                raise PluginError(
                    f"plugin '{ep.name}' ({ep.value}) failed to load: {exc!r}",
                    hint=f"reinstall it, or skip it with AGENTPACK_DISABLE_PLUGINS={ep.name}",
                ) from exc
            pm.register(module, name=ep.name)
            debug(__name__, "plugin %s loaded from %s", ep.name, ep.value)
    for plugin in plugins:
        if not pm.is_registered(plugin):
            pm.register(plugin)
    pm.hook.agentpack_add_hookspecs(pluginmanager=pm)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin '{exc.plugin}' implements an unknown hook: {exc}") from exc
    return pm


_HOST: Host | None = None


def get_host() -> Host:
    """The process-wide host, built on first use."""
    global _HOST
    if _HOST is None:
        _HOST = Host(create_plugin_manager())
    return _HOST


def current_host() -> Host | None:
    """The process-wide host if one was built (never builds one)."""
    return _HOST


def command_cache(name: str) -> dict[Any, Any] | None:
    """The process-wide host's per-command cache entry of module ``name`` (``None`` before a host is built)."""
    if _HOST is None:
        return None
    entry: dict[Any, Any] = _HOST.cache.setdefault(name, {})
    return entry


def set_host(host: Host | None) -> Host | None:
    """Replace the process-wide host (tests); returns the previous one."""
    global _HOST
    previous, _HOST = _HOST, host
    return previous


__all__ = ["command_cache", "create_plugin_manager", "current_host", "get_host", "set_host"]
