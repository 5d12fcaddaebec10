"""The skill's view of the machine, made by bubblewrap: its own namespaces and a file system built for the run.

A skill sees the system's programs and libraries (``/usr``, the ``/etc`` files
programs need), the Python installation running agentpack, its own folder, the
declared parts of its workspace and a private ``/tmp``, ``/proc`` and ``/dev``;
nothing else of the host exists for it. Everything is read-only except the
folders its ``filesystem.write`` globs name. bubblewrap also makes the PID,
IPC, UTS, network (unless granted) and, where available, user namespaces,
starts the skill in a new session, and kills the whole namespace when the skill
ends or when the runner dies (``--die-with-parent``).

Whether bubblewrap works here is probed once and the verdict kept in the disk
cache for this bwrap binary, kernel, user and user-namespace settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import lru_cache
from typing import ClassVar

from agentpack.kernel.records import Record, constant

from . import diskcache
from .globs import WILDCARDS, GlobError, segments

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "ssl/certs",
    "ca-certificates",
    "ca-certificates.conf",
    "mime.types",
    "os-release",
    "debian_version",
)
"""The ``/etc`` entries a skill sees: what the C library, interpreters and TLS need, no credentials."""
SEARCH_PATH = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin")
USERNS_SETTINGS = (
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)
KIND = "bwrap"


class Probe(Record):
    """bubblewrap here: its ``path`` and ``version``, whether a ``userns`` is made, or the ``error``."""

    __slots__ = ("path", "version", "userns", "error")
    DEFAULTS: ClassVar = {
        "path": constant(None),
        "version": constant(""),
        "userns": constant(False),
        "error": constant(None),
    }
    path: str | None
    version: str
    userns: bool
    error: str | None


def namespace_args(*, network: bool, userns: bool) -> list[str]:
    """The namespace and lifetime options of every sandboxed run."""
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    if userns:
        args += ["--unshare-user", "--disable-userns"]
    if network:
        args.append("--share-net")
    return args


@lru_cache(maxsize=1)
def system_args() -> tuple[str, ...]:
    """Mounts of the system: ``/usr`` and friends read-only, the listed ``/etc`` files, a private /proc and /dev."""
    args: list[str] = ["--proc", "/proc", "--dev", "/dev"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return tuple(args)


def _probe_run(path: str, userns: bool) -> str | None:
    argv = [path, *namespace_args(network=False, userns=userns), *system_args(), "--tmpfs", "/tmp"]
    argv += ["--remount-ro", "/", "true"]
    try:
        done = subprocess.run(argv, check=False, capture_output=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit status {done.returncode}"


@lru_cache(maxsize=1)
def probe() -> Probe:
    """Whether bubblewrap can sandbox a skill here (with a user namespace where it can)."""
    if not sys.platform.startswith("linux"):
        return Probe(error="bubblewrap needs Linux")
    path = next((p for p in (os.path.join(d, "bwrap") for d in SEARCH_PATH) if os.access(p, os.X_OK)), None)
    if path is None:
        return Probe(error="bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    settings = []
    for name in USERNS_SETTINGS:
        try:
            with open(name, encoding="ascii") as handle:
                settings.append(handle.read().strip())
        except OSError:
            settings.append("-")
    ident = f"{path}:{os.uname().release}:{os.geteuid()}:{','.join(settings)}"
    entry = diskcache.read(KIND, ident)
    if isinstance(entry, dict):
        return Probe(**entry)
    errors = []
    found = None
    for userns in (True, False) if os.geteuid() == 0 else (True,):
        error = _probe_run(path, userns)
        if error is None:
            found = Probe(path=path, version=_version(path), userns=userns)
            break
        errors.append(error)
    result = found or Probe(path=path, error="bubblewrap cannot make a sandbox here: " + "; ".join(errors))
    diskcache.write(KIND, ident, [diskcache.stamp(path)], result.as_dict())
    return result


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], check=False, capture_output=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.decode("utf-8", "replace").strip()


@lru_cache(maxsize=1)
def runtime_roots() -> tuple[str, ...]:
    """Real folders of the Python running agentpack: prefixes, what import path entries hold for the import
    system, editable installs' packages.

    The skills' ``python3`` is this interpreter, so they see what it imports
    from (read-only). An import path entry outside the installation's prefixes
    (``PYTHONPATH``, a project folder added by a ``.pth`` file) is not mounted
    whole: only what a finder can resolve in it (``importable``), so a home folder
    on the import path shows its packages and modules, not ``~/.ssh``. The current
    folder, ``''`` and top-level folders (``/tmp``) are left out.
    """
    here = os.getcwd()
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    prefixes.add(os.path.dirname(os.path.realpath(sys.executable)))
    paths = set(prefixes)
    inside = [os.path.realpath(p) for p in prefixes]
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        if any(_within(os.path.realpath(entry), prefix) for prefix in inside) or not os.path.isdir(entry):
            paths.add(entry)  # the installation's own folders, and zip files
        else:
            paths.update(importable(entry))
    for finder in sys.meta_path:  # setuptools' editable finders map package names to source folders
        mapping = getattr(sys.modules.get(getattr(finder, "__module__", "") or ""), "MAPPING", None)
        if isinstance(mapping, dict):
            paths.update(v for v in mapping.values() if isinstance(v, str))
    real = sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})
    real = [p for p in real if p.count("/") >= 2]  # never a whole top-level folder such as /tmp or /home
    system = [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    return tuple(p for p in real if not any(_within(p, other) for other in real + system if other != p))


def importable(folder: str) -> list[str]:
    """The entries of an import path folder a finder can resolve: packages (folders named as identifiers),
    modules and extension modules (``name.py``, ``name.cpython-311-x86_64-linux-gnu.so``...) and
    distribution metadata (``*.dist-info``, ``*.egg-info``, for ``importlib.metadata``)."""
    from importlib.machinery import all_suffixes

    suffixes = tuple(all_suffixes())
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(folder, name)
        if (
            name.endswith((".dist-info", ".egg-info"))
            or (name.isidentifier() and os.path.isdir(path))
            or (name.split(".", 1)[0].isidentifier() and name.endswith(suffixes) and os.path.isfile(path))
        ):
            out.append(path)
    return out


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def fixed_prefix(glob: str, *, keep_name: bool) -> str:
    """The leading folders of ``glob`` without wildcards (``out/**`` -> ``out``; ``a.txt`` -> ``''``).

    With ``keep_name`` a glob without any wildcard stays whole (a single file can be
    bound for reading; writing a file needs its folder, for a temporary file and a rename).
    """
    parts = segments(glob)  # GlobError for a glob that is not plain workspace-relative segments
    for index, part in enumerate(parts):
        if WILDCARDS & set(part):
            return "/".join(parts[:index])
    return "/".join(parts if keep_name else parts[:-1])


class View(Record):
    """The mounts of one run: bubblewrap ``args``, the workspace-relative ``readable`` and ``writable``
    parts, the folders ``created`` for write globs (deepest first; removed after the run when left empty)
    and ``notes``."""

    __slots__ = ("args", "readable", "writable", "created", "notes")
    DEFAULTS: ClassVar = {"args": list, "readable": list, "writable": list, "created": list, "notes": list}
    args: list[str]
    readable: list[str]
    writable: list[str]
    created: list[str]
    notes: list[str]


def plan_view(*, skill_dir: str, program: str, workspace: str, read_globs: list[str], write_globs: list[str]) -> View:
    """The mounts for a skill in ``skill_dir`` (real path) running ``program`` on ``workspace`` (real path).

    Mounts go parents first, so a deeper one shadows its part of a shallower one:
    a read-only shield (the skill tree, the Python installation) inside a writable
    workspace part stays read-only, and a writable part inside a protected one is refused.
    """
    view = View()
    protected = [skill_dir, *runtime_roots()]
    mounts: dict[str, str] = {workspace: "empty"}  # the workspace path exists, empty and read-only, unless bound
    for rel in _prefixes(write_globs, "write", view.notes, keep_name=False):
        path = os.path.join(workspace, rel) if rel else workspace
        if not os.path.lexists(path):
            error = _make_folders(workspace, rel, view.created)
            if error:
                view.notes.append(f"write area '{rel}' could not be made: {error}")
                continue
        real = os.path.realpath(path)
        if not _within(real, workspace) or not os.path.isdir(real):
            view.notes.append(f"write area '{rel}' is not a folder inside the workspace: not writable")
        elif any(_within(real, root) for root in protected):
            view.notes.append(f"write area '{rel}' lies in the skill's or agentpack's own files: not writable")
        else:
            mounts[real] = "rw"
            view.writable.append(rel)
    writable = [p for p, kind in mounts.items() if kind == "rw"]
    for rel in _prefixes(read_globs, "read", view.notes, keep_name=True):
        real = os.path.realpath(os.path.join(workspace, rel) if rel else workspace)
        if not os.path.exists(real):
            continue
        if not _within(real, workspace):
            view.notes.append(f"read area '{rel}' leads out of the workspace: not visible")
        elif not any(_within(real, w) for w in writable):
            if mounts.get(real, "empty") == "empty":
                mounts[real] = "ro"
            view.readable.append(rel)
    tree = os.path.dirname(skill_dir)  # sibling skills and _access.yaml: shielded where a write area holds them
    for root in [*protected, *([tree] if any(_within(tree, w) for w in writable) else [])]:
        mounts[root] = "shield"
    program_real = os.path.realpath(program)
    if not any(_within(program_real, r) for r in [*mounts, *SYSTEM_DIRS]):
        mounts[program_real] = "shield"
    for path in sorted(mounts, key=lambda p: p.rstrip("/").count("/")):
        kind = mounts[path]
        if kind == "empty":
            view.args += ["--tmpfs", path]
        else:
            view.args += ["--bind" if kind == "rw" else "--ro-bind", path, path]
    view.args += [arg for path, kind in mounts.items() if kind == "empty" for arg in ("--remount-ro", path)]
    return view


def _prefixes(globs: list[str], mode: str, notes: list[str], *, keep_name: bool) -> list[str]:
    """The distinct fixed prefixes of ``globs``; a glob that does not parse is noted and mounts nothing."""
    out: dict[str, None] = {}
    for glob in globs:
        try:
            out[fixed_prefix(glob, keep_name=keep_name)] = None
        except GlobError as exc:
            notes.append(f"{mode} glob {glob!r} is not a workspace-relative glob ({exc}): not mounted")
    return list(out)


def _make_folders(workspace: str, rel: str, created: list[str]) -> str | None:
    """Make the missing folders of ``rel`` one by one, never through a link; the error text, or None."""
    path = workspace
    for part in rel.split("/"):
        path = os.path.join(path, part)
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            return "a path on the way is not a folder"
        if not os.path.lexists(path):
            try:
                os.mkdir(path)
            except OSError as exc:
                return exc.strerror or str(exc)
            created.insert(0, path)
    return None


def remove_created(folders: list[str]) -> None:
    """Remove the folders ``plan_view`` made (deepest first) where the skill left them empty."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            pass


__all__ = ["Probe", "View", "fixed_prefix", "namespace_args", "plan_view", "probe", "remove_created", "system_args"]
