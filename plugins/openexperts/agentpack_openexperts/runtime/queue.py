"""The invocation queue: ``parallel``, ``serial`` and ``serial_per_key`` on a fixed pool of workers.

A *lane* is a FIFO of jobs that run one at a time (``serial`` uses one lane per
trigger, ``serial_per_key`` one lane per key); jobs without a lane run as soon as
a worker is free. Lanes run in parallel with each other. Another implementation
(a distributed queue) can be registered through ``agentpack_openexperts_register_queues``
and must honour the same contract: ``start(handler)``, ``submit(job, lane)``,
``join(timeout)``, ``stop()``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("agentpack.openexperts")


@dataclass
class Job:
    run_id: str
    data: dict[str, Any] = field(default_factory=dict)


class InProcessQueue:
    def __init__(self, workers: int = 4) -> None:
        self.workers = max(1, workers)
        self._cond = threading.Condition()
        self._ready: deque[tuple[str | None, Job | None]] = deque()
        self._lanes: dict[str, deque[Job]] = {}
        self._pending = 0
        self._threads: list[threading.Thread] = []
        self._handler: Callable[[Job], None] | None = None
        self._stopped = False

    def start(self, handler: Callable[[Job], None]) -> None:
        self._handler = handler
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"openexperts-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def submit(self, job: Job, lane: str | None = None) -> None:
        with self._cond:
            self._pending += 1
            if lane is None:
                self._ready.append((None, job))
            elif lane in self._lanes:
                self._lanes[lane].append(job)  # queued behind the lane's running or waiting job
                return
            else:
                self._lanes[lane] = deque([job])
                self._ready.append((lane, None))
            self._cond.notify()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has finished; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout=timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=5)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopped or self._ready)
                if self._stopped:
                    return
                lane, job = self._ready.popleft()
                if lane is not None:
                    job = self._lanes[lane].popleft()
            try:
                assert self._handler is not None and job is not None
                self._handler(job)
            except Exception:  # the handler records failures; this is a last resort
                log.exception("job %s crashed", job.run_id if job else "?")
            finally:
                with self._cond:
                    self._pending -= 1
                    if lane is not None:
                        if self._lanes[lane]:
                            self._ready.append((lane, None))
                        else:
                            del self._lanes[lane]
                    self._cond.notify_all()
