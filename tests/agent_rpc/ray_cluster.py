"""A real Ray cluster on 127.0.0.1 for tests and benchmarks: ``ray start --head`` and nodes joining it.

Every node is a ``ray start --block`` in a session of its own, so its whole
process group (raylet, workers, agents' parents) can be stopped or killed;
``stop()`` SIGTERMs each group, waits, then SIGKILLs what is left. Nodes
advertise 127.0.0.1 only: Ray's CLI would otherwise swap a loopback address
for the machine's outward one (unreachable in some sandboxes), so the head
runs with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's switch for
loopback) and joining nodes through a tiny wrapper that keeps the address
as given. Token authentication and usage statistics are off: nothing
listens beyond loopback and nothing phones home.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
JOIN = (
    "import sys\n"
    "from ray._private import ray_constants, services\n"
    "ray_constants.ENABLE_RAY_CLUSTER = True\n"
    "services.resolve_ip_for_localhost = lambda host: host\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv[0] = 'ray'\n"
    "main()\n"
)
HEALTH = {  # a lost node is noticed in about a second and a half, not Ray's default half minute
    "RAY_health_check_initial_delay_ms": "0",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
}


def ray_env(**extra: str) -> dict[str, str]:
    """The environment for nodes and for drivers that connect to them."""
    return {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        **HEALTH,
        **extra,
    }


def not_a_subreaper() -> None:
    """Make this process an ordinary parent again (an earlier in-process run made it a child subreaper).

    A killed node's orphans would otherwise be re-parented to this process,
    which does not reap them: the raylet stays a zombie, its workers still see
    it alive and never exit, and neither do the agents they hold.
    """
    if sys.platform == "linux":
        import ctypes

        from agentpack.io import proc

        ctypes.CDLL(None, use_errno=True).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, off
        proc._subreaper = None  # so that the next in-process run sets it again


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Node:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path, resources: dict[str, float]) -> None:
        self.proc = proc
        self.log = log
        self.resources = resources

    def kill(self) -> None:
        """SIGKILL the node's whole process group: a node lost without warning."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stop(self, grace: float = 3.0) -> set[int]:
        """SIGTERM the group, then SIGKILL it and every process the node started (Ray's workers and their
        agents run in sessions of their own); returns those processes' ids."""
        family = descendants(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            family |= descendants(self.proc.pid)
        self.kill()
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return family


class LocalCluster:
    """``start()`` a head; ``add_node()`` more; ``address`` for drivers; ``stop()`` leaves no process behind."""

    def __init__(self, temp_dir: Path, *, cpus: int = 1, object_store: int = 100_000_000) -> None:
        self.temp_dir = temp_dir
        self.cpus = cpus
        self.object_store = object_store
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[Node] = []
        self.stopped: set[int] = set()
        """Every process the stopped nodes had started."""

    def _start(
        self, program: list[str], args: list[str], name: str, resources: dict[str, float], cpus: int | None
    ) -> Node:
        log = self.temp_dir / f"{name}.log"
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        common = [
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--num-cpus",
            str(self.cpus if cpus is None else cpus),
            "--object-store-memory",
            str(self.object_store),
            "--disable-usage-stats",
            "--resources",
            json.dumps(resources),
        ]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [*program, "start", *args, *common],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=ray_env(),
                start_new_session=True,
            )
        node = Node(proc, log, resources)
        self.nodes.append(node)
        return node

    def start(self, resources: dict[str, float] | None = None, *, timeout: float = 90.0) -> Node:
        not_a_subreaper()
        head = self._start(
            [str(BIN / "ray")],
            [
                "--head",
                "--port",
                str(self.port),
                "--include-dashboard=false",
                "--temp-dir",
                str(self.temp_dir / "ray"),
            ],
            "head",
            resources or {"node_head": 1},
            None,
        )
        self._wait_started(head, timeout)
        return head

    def add_node(
        self, resources: dict[str, float] | None = None, *, cpus: int | None = None, timeout: float = 90.0
    ) -> Node:
        """A node joining the head; returns once the cluster counts it alive."""
        name = f"node{len(self.nodes)}"
        node = self._start(
            [str(BIN / "python"), "-c", JOIN], ["--address", self.address], name, resources or {name: 1}, cpus
        )
        self._wait_started(node, timeout)
        want = sum(1 for n in self.nodes if n.proc.poll() is None)
        deadline = time.monotonic() + timeout
        while self.alive_nodes() < want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray cluster did not count {want} nodes in {timeout:g} s")
            time.sleep(0.5)
        return node

    def alive_nodes(self) -> int:
        """Nodes the cluster counts as alive (asked by a short-lived driver)."""
        code = (
            "import ray, sys, logging\n"
            "ray.init(address=sys.argv[1], logging_level=logging.ERROR, log_to_driver=False)\n"
            "print(sum(1 for n in ray.nodes() if n['Alive']))\n"
        )
        out = subprocess.run(
            [str(BIN / "python"), "-c", code, self.address],
            capture_output=True,
            text=True,
            env=ray_env(),
            timeout=120,
        )
        return int(out.stdout.strip() or 0)

    @staticmethod
    def _wait_started(node: Node, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in node.log.read_text(errors="replace"):
            if node.proc.poll() is not None:
                raise RuntimeError(f"a Ray node exited: {node.log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"a Ray node did not start in {timeout:g} s: {node.log}")
            time.sleep(0.2)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            self.stopped |= node.stop()
        self.nodes.clear()

    def none_left(self, timeout: float = 30.0) -> bool:
        """True once neither a process the nodes started nor one naming the cluster's folder is alive."""
        deadline = time.monotonic() + timeout
        while any(_alive(pid) for pid in self.stopped) or processes_mentioning(str(self.temp_dir)):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True


@contextmanager
def short_temp_dir() -> Iterator[Path]:
    """A fresh folder under /tmp with a short path: Ray's socket paths inside it must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def none_left(temp_dir: Path, timeout: float = 30.0) -> bool:
    """True once no live process mentions ``temp_dir`` (Ray's node processes carry their session folder)."""
    deadline = time.monotonic() + timeout
    while processes_mentioning(str(temp_dir)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _stat(pid: int | str) -> list[str] | None:
    """A process's /proc stat fields after the command name (state, ppid, pgrp, ...), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def descendants(root: int) -> set[int]:
    """``root``'s live descendants, whatever their process group or session."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that contain ``text`` (to check that nothing is left behind)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and _alive(int(entry.name)):
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def node_counts(report: dict[str, Any]) -> dict[str, int]:
    """Scenarios per node id in a run report."""
    counts: dict[str, int] = {}
    for scenario in report["scenarios"]:
        node = (scenario.get("node") or {}).get("id", "?")
        counts[node] = counts.get(node, 0) + 1
    return counts
