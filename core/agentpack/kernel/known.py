"""The built-in plugins as the core knows them without importing one: their extra, command group and
the files their packs hold, so a message can name the plugin a user lacks and how to install it."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class KnownPlugin(NamedTuple):
    name: str
    """The entry-point name."""
    extra: str
    """The ``agentpack-core`` extra that installs it."""
    command: str
    """Its command group (``agentpack COMMAND``)."""
    markers: tuple[str, ...]
    """Files (folders end in ``/``) a pack of its format holds at its root."""
    what: str
    scaffold: str
    """The name of its scaffold (``agentpack init NAME``)."""


KNOWN_PLUGINS = (
    KnownPlugin("ecp", "ecp", "ecp", ("expert/EXPERT.yaml",), "an Expert Context Pack", "ecp"),
    KnownPlugin("openexperts", "openexperts", "experts", ("expert.yaml",), "an openexperts package", "expert"),
    KnownPlugin("skillctl", "skillctl", "skill", ("skill.yaml",), "a deterministic skill", "deterministic-skill"),
    KnownPlugin("dci", "dci", "dci", (".dci/",), "a DCI workspace", "dci"),
    KnownPlugin(
        "agent_rpc", "agent-rpc", "rpc", ("manifest.yaml", "manifest.yml"), "an agent evaluation manifest", "rpc"
    ),
)
SKILL_MARKERS = ("SKILL.md", "skill.md")


def install_hint(plugin: KnownPlugin) -> str:
    """The command that installs ``plugin`` the way agentpack was installed."""
    from agentpack.io.installhint import CORE, command

    return command(CORE, plugin.extra)


def plugin_for_command(name: str) -> KnownPlugin | None:
    return next((p for p in KNOWN_PLUGINS if p.command == name), None)


def _holds(folder: Path, marker: str) -> bool:
    return (folder / marker).is_dir() if marker.endswith("/") else (folder / marker).is_file()


def _claimant(path: Path) -> tuple[KnownPlugin, str] | None:
    """The known plugin whose marker ``path`` is or holds (itself or one sub-folder down), with the marker."""
    if path.is_file():
        for plugin in KNOWN_PLUGINS:
            for marker in plugin.markers:
                if "/".join(path.parts[-marker.count("/") - 1 :]) == marker:
                    return plugin, marker
        return None
    for folder in (path, *_subfolders(path)):
        for plugin in KNOWN_PLUGINS:
            for marker in plugin.markers:
                if _holds(folder, marker):
                    return plugin, marker if folder == path else f"{folder.name}/{marker}"
    return None


def _subfolders(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _listing(path: Path) -> str:
    if path.is_file():
        return f"a file with no format's name or content ({path.name})"
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    except OSError as exc:
        return f"a folder that cannot be read ({exc.strerror})"
    if not names:
        return "an empty folder"
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"a folder of {len(names)} entries ({shown})"


def not_a_pack(path: Path, formats: list[str], loaded: set[str], installed: set[str]) -> tuple[str, str]:
    """The message and hint for ``path`` that no installed format claims: what it holds, and which
    plugin reads that. ``formats`` are the installed formats; ``loaded`` and
    ``installed`` are the plugin names loaded and present as entry points."""
    known = ", ".join(sorted(formats)) or "none"
    found = _claimant(path)
    if found is None:
        return (
            f"{path}: not a pack of any installed format: {_listing(path)}",
            f"a pack holds one of {', '.join(_all_markers())} (installed formats: {known})",
        )
    plugin, marker = found
    what = f"{path}: not a pack of any installed format: it holds {marker}, {plugin.what}"
    if plugin.name in loaded:
        return f"{what}, but plugin '{plugin.name}' does not recognise it", f"installed formats: {known}"
    if plugin.name in installed:
        return (
            f"{what} (plugin '{plugin.name}'), and that plugin is installed but not loaded",
            "check AGENTPACK_PLUGINS and AGENTPACK_DISABLE_PLUGINS",
        )
    return f"{what}, read by plugin '{plugin.name}', which is not installed", install_hint(plugin)


def _all_markers() -> list[str]:
    return [*SKILL_MARKERS[:1], *(m for p in KNOWN_PLUGINS for m in p.markers if not m.endswith(".yml"))]


__all__ = ["KNOWN_PLUGINS", "KnownPlugin", "install_hint", "not_a_pack", "plugin_for_command"]
