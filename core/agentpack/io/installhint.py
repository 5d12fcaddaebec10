"""The command that installs an extra the way agentpack itself was installed.

No index serves the agentpack distributions, so a hint names what works here: the extra's requirements,
with each ``agentpack-*`` sibling as its folder of the tree agentpack came from (read from the PEP 610
``direct_url.json`` of ``agentpack-core``; editable stays editable), installed by the tool that installed
agentpack: ``pipx inject`` in a pipx venv, ``uv tool install`` in a uv tool, ``uv pip`` where uv
installed it, else this interpreter's ``pip``. Only error paths call it: the metadata reads are lazy.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse

CORE = "agentpack-core"
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


class Install(NamedTuple):
    """How ``agentpack-core`` was installed."""

    tool: str
    """``pipx``, ``uv-tool``, ``uv`` or ``pip``."""
    tree: Path | None
    """The source folder it was installed from, if it was a local folder."""
    editable: bool


def _distribution(name: str) -> object | None:
    from importlib import metadata

    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def detect(prefix: Path | None = None) -> Install:
    """How ``agentpack-core`` was installed into ``prefix`` (default ``sys.prefix``)."""
    root = Path(sys.prefix if prefix is None else prefix)
    dist = _distribution(CORE)
    read = getattr(dist, "read_text", lambda _name: None)
    tree, editable = _tree(read("direct_url.json"))
    installer = (read("INSTALLER") or "").strip()
    if (root / "pipx_metadata.json").is_file():
        tool = "pipx"
    elif (root / "uv-receipt.toml").is_file():
        tool = "uv-tool"
    elif installer == "uv":
        tool = "uv"
    else:
        tool = "pip"
    return Install(tool, tree, editable)


def _tree(direct_url: str | None) -> tuple[Path | None, bool]:
    """The local folder and editable flag of a PEP 610 ``direct_url.json``; ``(None, False)`` otherwise."""
    try:
        data = json.loads(direct_url or "null")
    except ValueError:
        return None, False
    if not isinstance(data, dict) or not isinstance(data.get("dir_info"), dict):
        return None, False
    url = urlparse(str(data.get("url", "")))
    if url.scheme != "file":
        return None, False
    return Path(unquote(url.path)), bool(data["dir_info"].get("editable"))


def extra_requirements(distribution: str, extra: str) -> list[str]:
    """The requirements ``distribution[extra]`` adds, from its installed metadata; ``[distribution[extra]]``
    when it is not installed."""
    dist = _distribution(distribution)
    requires = getattr(dist, "requires", None)
    if dist is None or requires is None:
        return [f"{distribution}[{extra}]"]
    marker = re.compile(rf"""\bextra\s*==\s*["']{re.escape(extra)}["']""")
    found = [req.split(";", 1)[0].strip() for req in requires if ";" in req and marker.search(req.split(";", 1)[1])]
    return found or [f"{distribution}[{extra}]"]


def _argument(requirement: str, install: Install) -> list[str]:
    """``requirement`` as install arguments: an ``agentpack-*`` sibling becomes its folder of the tree."""
    match = _REQUIREMENT.match(requirement)
    if match is None or install.tree is None or not match[1].lower().startswith("agentpack-"):
        return [requirement]
    name = match[1].lower()
    folder = (
        install.tree if name == CORE else install.tree / "plugins" / name.removeprefix("agentpack-").replace("-", "_")
    )
    target = f"{folder}{match[2] or ''}"
    return ["-e", target] if install.editable else [target]


def command(distribution: str, extra: str | None = None, install: Install | None = None) -> str:
    """The shell command that installs ``distribution[extra]`` (or ``distribution``) into this agentpack."""
    how = install or detect()
    requirements = extra_requirements(distribution, extra) if extra else [distribution]
    args = [a for r in requirements for a in _argument(r, how)]
    if how.tool == "pipx":
        words = ["pipx", "inject", CORE, *args]
    elif how.tool == "uv-tool":
        base = _argument(CORE, how) if how.tree else [CORE]
        withs = [f"--with-editable={a}" if a != "-e" and prev == "-e" else f"--with={a}" for prev, a in _pairs(args)]
        words = ["uv", "tool", "install", "--reinstall", *base, *withs]
    elif how.tool == "uv":
        words = ["uv", "pip", "install", "--python", sys.executable, *args]
    else:
        words = [sys.executable, "-m", "pip", "install", *args]
    return " ".join(shlex.quote(w) for w in words)


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    """Each argument that is not ``-e``, with the one before it."""
    return [(args[i - 1] if i else "", a) for i, a in enumerate(args) if a != "-e"]


__all__ = ["Install", "command", "detect", "extra_requirements"]
