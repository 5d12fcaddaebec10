"""How one run is confined, and the run report's ``sandbox`` section that says so.

bubblewrap (``bwrap``) makes the namespaces and the file-system view. Seccomp
programs (``syscalls``) deny what the declaration does not grant: bubblewrap
loads the filter every process of the run gets (no new processes, no Unix
sockets), and ``boot``, the skill's first code, loads the one that denies
``execve`` (no filter loaded before an exec could deny exec). Without
bubblewrap, the network namespace of ``sandbox.spawn_isolated`` and the process
group remain, ``boot`` loads every filter, and the report lists what is missing.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentpack.io.proc import spawn
from agentpack.kernel.records import Record

from . import bwrap, syscalls
from .access import Grants
from .sandbox import NETNS_ENV, network_isolation, spawn_isolated

SANDBOX_ENV = "AGENTPACK_SKILLCTL_SANDBOX"
"""Set to ``off`` to never use bubblewrap (the report then lists what is missing)."""
OFF = ("off", "0", "no", "false")
PROTECTIONS = {
    "pid-namespace": "the skill sees other processes (and can read the /proc of the runner's user)",
    "mount-namespace": "the skill sees the whole file system; writes are detected afterwards, not blocked",
    "ipc-namespace": "the skill shares System V IPC and POSIX message queues with the host",
    "network-namespace": "the skill can reach the network",
    "die-with-runner": "processes of the skill can outlive a runner that is killed",
    "seccomp": "starting processes and programs, Unix sockets and io_uring are not blocked",
}
"""Each protection the report may list as missing, and what its absence lets a skill do."""
PYTHON_FLAGS = frozenset("bBdEIOPqsSuv")
log = logging.getLogger("agentpack_skillctl")
_WARNED: set[str] = set()


class Plan(Record):
    """One run's confinement: the ``launch`` argv (the skill, or ``boot`` around it), bubblewrap's ``prefix``
    (empty without it), the ``base`` seccomp program bubblewrap loads, the file ``view``, ``tmpdir`` (None:
    the runner's scratch folder), the report's ``sandbox`` section and ``enforcement`` levels."""

    __slots__ = ("launch", "prefix", "base", "view", "tmpdir", "section", "levels", "network")
    launch: list[str]
    prefix: list[str]
    base: bytes
    view: bwrap.View | None
    tmpdir: str | None
    section: dict[str, Any]
    levels: dict[str, str]
    network: bool

    @property
    def refused(self) -> bool:
        return bool(self.section["required"] and self.section["missing"])


@lru_cache(maxsize=1)
def boot_source() -> str:
    return (Path(__file__).parent / "boot.py").read_text(encoding="utf-8")


def python_command(argv: list[str]) -> tuple[list[str], str, str, list[str]] | None:
    """``(options, mode, target, args)`` when ``argv`` runs Python on a file, a module or code; else None."""
    if not re.fullmatch(r"python3(\.\d+)?", os.path.basename(os.path.realpath(argv[0]))):
        return None
    options: list[str] = []
    rest = iter(argv[1:])
    for arg in rest:
        if arg in ("-m", "-c"):
            target = next(rest, None)
            return None if target is None else (options, "module" if arg == "-m" else "code", target, list(rest))
        if arg in ("-X", "-W"):
            value = next(rest, None)
            if value is None:
                return None
            options += [arg, value]
        elif arg.startswith(("-X", "-W")) or (arg[:1] == "-" and len(arg) > 1 and set(arg[1:]) <= PYTHON_FLAGS):
            options.append(arg)
        elif arg.startswith("-"):
            return None  # '-' (stdin), '--', -x, -h and other rare forms: started as a program
        else:
            return options, "file", arg, list(rest)
    return None


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
"""Programs that are shells: a skill whose runtime is one of them runs its commands as the shell's children."""


def runs_a_shell(program: str, runtime_type: object) -> bool:
    """Whether a skill's runtime is a shell: a command that starts one (``sh impl/run.sh``, as the origin's
    template does with ``type: command``), or, for ``runtime.type: shell``, a script whose ``#!`` line names
    one. Declaring ``type: shell`` over another program (``python3 run.py``) does not make it a shell."""
    names = {os.path.basename(program), os.path.basename(os.path.realpath(program))}
    if names & SHELLS:
        return True
    if runtime_type != "shell":
        return False
    try:
        with open(program, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    return bool(words) and os.path.basename(words[0]) in SHELLS


def plan(
    *, argv: list[str], skill_dir: str, workspace: str, grants: Grants, require: bool, shell: bool = False
) -> Plan:
    """Decide how to confine ``argv`` (its program resolved) for a skill with ``grants``. With ``shell`` (the
    runtime is a shell), the commands the shell starts are the runtime's own, not subprocesses: fork and exec
    stay open even without ``subprocess.allowed``, and the rest of the sandbox holds (docs/skillctl.md)."""
    network_off = os.environ.get(NETNS_ENV, "").lower() in OFF
    shared_net = grants.network or network_off
    probe = bwrap.probe() if os.environ.get(SANDBOX_ENV, "").lower() not in OFF else None
    usable = probe is not None and probe.error is None
    missing: list[dict[str, str]] = []

    processes = grants.subprocess or shell
    base_rules = [
        *(["no-processes"] if not processes else []),
        *(["no-unix-sockets"] if not shared_net else []),
        "no-io-uring",
    ]
    python = python_command(argv)
    exec_rule = None if processes else ("no-exec" if python else "exec-fd-only")
    try:
        base = syscalls.program(tuple(base_rules)) if base_rules else b""
        exe = syscalls.program((exec_rule,)) if exec_rule else b""
        loaded = [*base_rules, *([exec_rule] if exec_rule else [])]
    except syscalls.SeccompUnavailable as exc:
        base = exe = b""
        loaded = []
        missing.append(_missing("seccomp", str(exc)))
    filters = [exe] if usable else [base, exe]
    filters = [f for f in filters if f]
    launch = list(argv)
    if filters:
        parent = "0" if usable else str(os.getpid())
        head = [",".join(f.hex() for f in filters), parent]
        if python:
            options, mode, target, args = python
            launch = [argv[0], *options, "-c", boot_source(), *head, mode, target, *args]
        else:
            launch = [sys.executable, "-I", "-S", "-c", boot_source(), *head, "exec", argv[0], *argv]

    levels = {
        "filesystem": "enforce" if usable else "detect",
        "subprocess": "seccomp" if "no-processes" in loaded else ("pid-namespace" if usable else "process-group"),
    }
    section: dict[str, Any] = {
        "level": "full",
        "tool": None,
        "namespaces": [],
        "seccomp": loaded,
        "dieWithRunner": usable or (bool(filters) and "no-processes" in loaded),
        "missing": missing,
        "required": require,
    }
    if not usable:
        reason = f"disabled by {SANDBOX_ENV}=off" if probe is None else str(probe.error)
        missing[:0] = [_missing(name, reason) for name in ("pid-namespace", "mount-namespace", "ipc-namespace")]
        if not section["dieWithRunner"]:
            missing.append(_missing("die-with-runner", reason))
        iso = network_isolation()
        if not shared_net and iso.level == "none":
            missing.append(_missing("network-namespace", iso.detail))
        section["namespaces"] = [] if shared_net or iso.level == "none" else ["net"]
        section["level"] = "partial"
        return Plan(launch, [], base, None, None, section, levels, grants.network)
    assert probe is not None and probe.path is not None
    section["tool"] = probe.version or "bubblewrap"
    section["namespaces"] = ["pid", "mount", "ipc", "uts", *([] if shared_net else ["net"])] + (
        ["user"] if probe.userns else []
    )
    if missing:
        section["level"] = "partial"
    program = argv[0]
    view = bwrap.plan_view(
        skill_dir=skill_dir,
        program=program,
        workspace=workspace,
        read_globs=grants.read_globs,
        write_globs=grants.write_globs,
    )
    prefix = [probe.path, *bwrap.namespace_args(network=shared_net, userns=probe.userns), *bwrap.system_args()]
    prefix += ["--tmpfs", "/tmp", *view.args, "--remount-ro", "/"]
    return Plan(launch, prefix, base, view, "/tmp", section, levels, grants.network)


def start(plan: Plan, *, cwd: str, **popen: Any) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start the planned run; the process and the report's ``network`` enforcement entry."""
    if not plan.prefix:
        proc, reached = spawn_isolated(plan.launch, network=plan.network, cwd=cwd, **popen)
        return proc, {"level": reached.level, "detail": reached.detail}
    argv = [*plan.prefix, "--chdir", cwd]
    read_end = None
    if plan.base:
        read_end, write_end = os.pipe()
        with open(write_end, "wb") as handle:
            handle.write(plan.base)  # a few hundred bytes: far below a pipe's buffer
        argv += ["--seccomp", str(read_end)]
        popen["pass_fds"] = (read_end,)
    try:
        proc = spawn([*argv, "--", *plan.launch], cwd=cwd, **popen)
    finally:
        if read_end is not None:
            os.close(read_end)
    if plan.network:
        return proc, {"level": "not-needed", "detail": "network granted"}
    if "net" not in plan.section["namespaces"]:
        return proc, {"level": "none", "detail": f"disabled by {NETNS_ENV}"}
    return proc, {"level": "namespace", "detail": "bubblewrap: a network namespace of the run's own"}


def freeze(plan: Plan, workspace: str, parts: list[str], *, limit: int) -> None:
    """Make the writable workspace ``parts`` read-only for the run (areas too large to watch for writes)."""
    assert plan.view is not None
    for rel in parts:
        real = os.path.realpath(os.path.join(workspace, rel) if rel else workspace)
        for i in range(len(plan.prefix) - 2):
            if plan.prefix[i : i + 3] == ["--bind", real, real]:
                plan.prefix[i] = "--ro-bind"
        plan.view.writable.remove(rel)
        plan.view.notes.append(
            f"write area '{rel or '.'}' holds more than {limit} entries, too many to watch for writes: read-only"
        )


def finish(plan: Plan) -> None:
    if plan.view is not None:
        bwrap.remove_created(plan.view.created)


def warn(skill_id: str, section: dict[str, Any]) -> None:
    """Log (once per process and text) which protections a run went without."""
    if not section["missing"]:
        return
    text = "; ".join(f"{m['protection']} ({m['reason']})" for m in section["missing"])
    if text not in _WARNED:
        _WARNED.add(text)
        log.warning("warning: skill %s ran with an incomplete sandbox, missing: %s", skill_id, text)


def _missing(protection: str, reason: str) -> dict[str, str]:
    return {"protection": protection, "reason": reason, "effect": PROTECTIONS[protection]}


__all__ = ["PROTECTIONS", "SANDBOX_ENV", "Plan", "finish", "freeze", "plan", "python_command", "start", "warn"]
