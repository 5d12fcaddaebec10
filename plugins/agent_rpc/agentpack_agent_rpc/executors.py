"""Executors decide where scenarios run. The built-in ``local`` one uses N worker threads on this machine.

An executor receives the scenarios, a ``make_worker()`` factory (a worker owns
one agent session and runs scenarios one after another) and a cancel event,
and calls ``on_result(record)`` for each finished scenario. Scenario records
are plain JSON, so an executor that ships scenarios to other machines (each
loading the manifest by path and running a worker there) fits the same
interface. Executors register through ``agentpack_agent_rpc_register_executors``.

An executor whose workers live in other processes or machines also has
``bind(run)``: the runner calls it before ``run`` with itself (see ``Run``),
so the executor can ship the manifest and settings and build workers there
with ``Runner(manifest, options).worker()``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    import pluggy


class Worker(Protocol):
    def run_scenario(self, scenario: Any) -> dict[str, Any]: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


class Executor(Protocol):
    def run(
        self,
        scenarios: list[Any],
        make_worker: Callable[[], Worker],
        jobs: int,
        on_result: Callable[[dict[str, Any]], None],
        cancel: threading.Event,
    ) -> None: ...


class Run(Protocol):
    """What ``bind(run)`` gets: the run, as an executor that works outside this process needs it.

    ``deadline`` is the ``time.monotonic()`` of ``--max-duration`` (inf without);
    to stop the run, set ``stop_reason`` then ``cancel``; ``note_agent(info)``
    takes the ``agent/initialize`` answer a remote worker got; ``skipped``
    builds a scenario record that did not run.
    """

    manifest: Any
    options: Any
    deadline: float
    cancel: threading.Event
    stop_reason: str
    warnings: list[str]

    def note_agent(self, info: dict[str, Any]) -> None: ...

    def skipped(self, scenario: Any, reason: str, message: str) -> dict[str, Any]: ...


class ExecutorInfo(NamedTuple):
    """An executor a plugin registers: its ``--executor`` name and a factory."""

    name: str
    factory: Callable[[], Executor]
    description: str = ""
    plugin: str | None = None


class LocalExecutor:
    """Serial in the calling thread for one job; otherwise ``jobs`` threads, each with its own worker."""

    def run(
        self,
        scenarios: list[Any],
        make_worker: Callable[[], Worker],
        jobs: int,
        on_result: Callable[[dict[str, Any]], None],
        cancel: threading.Event,
    ) -> None:
        if jobs <= 1 or len(scenarios) <= 1:
            worker = make_worker()
            try:
                for scenario in scenarios:
                    if cancel.is_set():
                        break
                    on_result(worker.run_scenario(scenario))
            finally:
                worker.close()
            return
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for scenario in scenarios:
            todo.put(scenario)
        workers: list[Worker] = []
        lock = threading.Lock()

        def loop() -> None:
            worker = make_worker()
            with lock:
                workers.append(worker)
            try:
                while not cancel.is_set():
                    try:
                        scenario = todo.get_nowait()
                    except queue.Empty:
                        return
                    record = worker.run_scenario(scenario)
                    with lock:
                        on_result(record)
            finally:
                worker.close()

        threads = [
            threading.Thread(target=loop, name=f"agent-rpc-worker-{i}", daemon=True)
            for i in range(min(jobs, len(scenarios)))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.1)
        except KeyboardInterrupt:
            cancel.set()
            with lock:
                for worker in workers:
                    worker.kill()
            for thread in threads:
                thread.join(5.0)


def collect_executors(pm: pluggy.PluginManager) -> dict[str, ExecutorInfo]:
    """Every registered executor, by name; two plugins registering one name is an error naming both."""
    from agentpack.kernel.host import collect_registrations

    return collect_registrations(pm, "agentpack_agent_rpc_register_executors", "executor")
