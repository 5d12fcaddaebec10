"""What runs on a node: a scenario slot (one agent session) and the judge clients bound to the cluster-wide limit."""

from __future__ import annotations

import math
import os
import socket
import time
from pathlib import Path
from typing import Any

import ray

from .. import __version__
from ..graders.base import GradeContext
from ..runner import Runner, RunOptions
from .package import relocate


class Slot:
    """A runner's worker on this node, fed scenarios by index; a Ray actor (``executor`` applies ``ray.remote``).

    ``run`` calls execute one at a time; ``stop`` and ``close`` go through a
    concurrency group of their own so they reach a slot in the middle of a
    scenario, as ``LocalExecutor`` reaches its threads' workers.
    """

    def __init__(self, manifest: Any, options: dict[str, Any], env: dict[str, str], limiter: Any) -> None:
        manifest = relocate(manifest, Path.cwd())  # Ray unpacked the manifest's folder here
        self.scenarios = {scenario.index: scenario for scenario in manifest.scenarios}
        self.runner = Runner(manifest, RunOptions(**options))
        clients: dict[tuple, Any] = LimitedClients(limiter) if limiter is not None else {}
        self.runner.context = GradeContext(judge=manifest.judge, env=env, clients=clients)
        self.worker = self.runner.worker()
        self.node = {
            "id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "host": socket.gethostname(),
        }

    def ready(self) -> dict[str, Any]:
        """This slot's node, and the plugin version there (the driver warns on a mismatch)."""
        return {"node": self.node, "version": __version__, "pid": os.getpid()}

    def run(self, index: int, remaining: float | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The scenario's record and the agent's ``initialize`` answer; None when the run was stopped before it."""
        runner = self.runner
        if runner.cancel.is_set():
            return None
        runner.deadline = math.inf if remaining is None else time.monotonic() + remaining
        record = self.worker.run_scenario(self.scenarios[index])
        return record, runner.agent

    def stop(self, reason: str, kill: bool) -> None:
        """Stop as the local run stops: no new step after this; ``kill`` ends the agent mid-step (Ctrl-C)."""
        self.runner.stop_reason = reason
        self.runner.cancel.set()
        if kill:
            self.worker.kill()

    def close(self) -> None:
        """Retire the agent (end of input, grace period, then its process group is killed)."""
        self.worker.close()
        self.runner.finish()
        self.runner.context.close()


class LimitedClients(dict):
    """``GradeContext.clients`` whose ``llm_judge`` clients hold a permit of the cluster-wide limit per call."""

    def __init__(self, limiter: Any) -> None:
        super().__init__()
        self.limiter = limiter

    def __setitem__(self, key: tuple, client: Any) -> None:
        if key and key[0] == "llm_judge":
            client = _Limited(client, self.limiter)
        super().__setitem__(key, client)


class _Limited:
    """A chat client whose ``complete`` waits for a permit of the limiter actor first."""

    def __init__(self, client: Any, limiter: Any) -> None:
        self.client = client
        self.limiter = limiter

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        token = ray.get(self.limiter.acquire.remote())
        try:
            return self.client.complete(*args, **kwargs)
        finally:
            self.limiter.release.remote(token)

    def close(self) -> None:
        self.client.close()
