"""A run's environment (only what is granted) and, where bubblewrap is not used, its network namespace."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from agentpack.io.proc import spawn
from agentpack.kernel.records import Record, constant

BASE_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01T00:00:00Z, the earliest ZIP timestamp
NETNS_ENV = "AGENTPACK_SKILLCTL_NETNS"
"""Set to ``off`` to never use a network namespace (the report then says level ``none``)."""


def base_path() -> str:
    """The interpreter's folder first (so ``python3`` is the one running agentpack), then the system's."""
    first = str(Path(sys.executable).parent)
    return os.pathsep.join(dict.fromkeys((first, *BASE_PATH)))


def find_program(name: str, path: str) -> str | None:
    """The first executable file ``name`` in the ``path`` folders (``shutil.which`` without its import)."""
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def build_env(
    *, granted: list[str], time: str, randomness: str, extra: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The child's environment and the fixed determinism variables it contains.

    Only ``granted`` names are copied from ours; ``time`` and ``randomness``
    other than ``allowed`` pin TZ, SOURCE_DATE_EPOCH and PYTHONHASHSEED.
    """
    env = {
        "PATH": base_path(),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUTF8": "1",
        "PYTHONNOUSERSITE": "1",
    }
    for name in granted:
        if name in os.environ:
            env[name] = os.environ[name]
    fixed: dict[str, str] = {}
    if time != "allowed":
        fixed.update(TZ="UTC", SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    if randomness != "allowed":
        fixed["PYTHONHASHSEED"] = "0"
    env.update(fixed)
    env.update(extra)
    return env, fixed


class NetworkIsolation(Record):
    """``level`` (namespace, user-namespace, none), the ``prefix`` of argv (unshare(1)), a ``detail`` for the
    report, and ``in_thread`` when ``netns.in_fresh_namespace`` makes the namespace around the spawn."""

    __slots__ = ("level", "prefix", "detail", "in_thread")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"in_thread": constant(False)}
    level: str
    prefix: tuple[str, ...]
    detail: str
    in_thread: bool


IN_THREAD_DETAIL = "fresh network namespace: unshare(CLONE_NEWNET) around the spawn, no unshare(1) exec"
_IN_THREAD_FAILED: list[str] = []
_SPAWNED = [False]
"""Whether this process spawned in an in-thread namespace before (from the second run on, spares are made)."""


@lru_cache(maxsize=1)
def network_isolation() -> NetworkIsolation:
    """How far network isolation goes here (decided once per process; the unshare(1) probe only when needed)."""
    if os.environ.get(NETNS_ENV, "").lower() in ("off", "0", "no", "false"):
        return NetworkIsolation("none", (), f"disabled by {NETNS_ENV}")
    linux = sys.platform.startswith("linux")
    if linux and os.geteuid() == 0 and not _IN_THREAD_FAILED:
        return NetworkIsolation("namespace", (), IN_THREAD_DETAIL, in_thread=True)
    unshare = find_program("unshare", os.pathsep.join((*BASE_PATH, "/usr/sbin", "/sbin")))
    if not linux or unshare is None:
        return NetworkIsolation("none", (), "no unshare(1) on this system: network access is not blocked")
    candidates = [
        ("namespace", (unshare, "--net", "--")),
        ("user-namespace", (unshare, "--net", "--map-current-user", "--")),
        ("user-namespace", (unshare, "--net", "--map-root-user", "--")),
    ]
    if os.geteuid() != 0:
        candidates = candidates[1:]
    errors = list(_IN_THREAD_FAILED)
    for level, prefix in candidates:
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=5, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(str(exc))
            continue
        if probe.returncode == 0:
            return NetworkIsolation(level, prefix, f"fresh network namespace via unshare(1) {' '.join(prefix[1:-1])}")
        errors.append(probe.stderr.decode("utf-8", "replace").strip())
    return NetworkIsolation(
        "none",
        (),
        "network namespaces are not permitted here ("
        + "; ".join(e for e in errors if e)[:300]
        + "): network access is not blocked",
    )


def spawn_isolated(argv: list[str], *, network: bool, **popen: Any) -> tuple[subprocess.Popen, NetworkIsolation]:
    """Start ``argv`` (``agentpack.io.proc.spawn``) in a fresh network namespace unless ``network`` is granted.

    Returns the process and the isolation reached. When the in-thread namespace
    turns out not to be permitted, the next level is probed and used at once.
    """
    if network:
        return spawn(argv, **popen), NetworkIsolation("not-needed", (), "network granted")
    iso = network_isolation()
    if iso.in_thread:
        from .netns import NamespaceError, in_fresh_namespace, make_spare

        try:
            proc = in_fresh_namespace(lambda: spawn(argv, **popen))
        except NamespaceError as exc:
            _IN_THREAD_FAILED.append(str(exc))
            network_isolation.cache_clear()
            iso = network_isolation()
        else:
            if _SPAWNED[0]:  # a process that runs skills repeatedly: make the next namespace while this child runs
                make_spare()
            _SPAWNED[0] = True
            return proc, iso
    return spawn([*iso.prefix, *argv], **popen), iso
