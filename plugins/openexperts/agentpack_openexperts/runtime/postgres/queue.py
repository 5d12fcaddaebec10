"""The invocation queue on PostgreSQL, through procrastinate: one job per run, the run's lane as its lock.

procrastinate runs one job per lock at a time, the oldest first, across every worker
of the database: ``serial`` and ``serial_per_key`` keep their meaning across
processes and machines, and ``parallel`` jobs (no lock) take any free worker.

A job is deferred in the transaction that creates its run (``store.transaction()``),
so an accepted event always has both. Workers heartbeat; the jobs of a worker silent
for ``lease`` seconds are handed back to the queue, where another worker resumes the
run from its execution log. A job whose run did not reach a terminal state (the
worker stopped, the database went away) goes back to the queue too, keeping its
place in its lane, and so does a job this worker holds but no longer runs (its end
could not be recorded while the database was away). procrastinate's worker stops
when it loses the database: it is restarted with backoff until ``stop()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from procrastinate import App, BaseRetryStrategy, JobContext, PsycopgConnector, RetryDecision
from procrastinate.jobs import Job as ProcrastinateJob
from procrastinate.manager import JobManager
from procrastinate.sync_psycopg_connector import SyncPsycopgConnector
from procrastinate.utils import utcnow
from procrastinate.worker import Worker
from psycopg_pool import AsyncConnectionPool

from ..executor import TERMINAL
from ..queue import Job
from .store import PostgresStore

log = logging.getLogger("agentpack.openexperts")
QUEUE = "openexperts"
TASK = "openexperts.run"
MAX_JOB_ATTEMPTS = 100
STALE_STATISTICS = 200
"""Changed rows of the job table after which a janitor analyzes it."""
ANALYZE_EVERY = 1.0
"""Seconds between two looks at the job table's statistics."""


async def _relaxed(conn: Any) -> None:
    """procrastinate's connections: one round trip per query (autocommit, no BEGIN and COMMIT around each),
    committed asynchronously: losing one of its writes in a crash of the database only runs a job again, and
    a run that is done or owned elsewhere does nothing the second time."""
    await conn.set_autocommit(True)
    await conn.execute("SET synchronous_commit TO off")


def _unchecked_pool(**options: Any) -> AsyncConnectionPool:
    """procrastinate's pool without its check of every connection handed out (a round trip per query): a
    connection the database dropped fails one query, and the worker restarts on a fresh pool."""
    return AsyncConnectionPool(**{**options, "check": None})


class RunNotFinished(Exception):
    """The run is resumable but not done (its worker is stopping, or the database went away)."""


class _Backoff(BaseRetryStrategy):
    """Retry every job whose run is not finished: 0.25 s, doubling up to 30 s."""

    def get_retry_decision(self, *, exception: BaseException, job: ProcrastinateJob) -> RetryDecision | None:
        if job.attempts + 1 >= MAX_JOB_ATTEMPTS:
            return None
        return RetryDecision(retry_in={"seconds": min(0.25 * 2 ** min(job.attempts, 7), 30.0)})


class PostgresQueue:
    """``start(handler)``, ``submit(job, lane)``, ``join(timeout)``, ``stop()`` over procrastinate.

    ``workers`` is the number of runs this process executes at once; 0 only enqueues
    (an intake process).
    """

    def __init__(self, store: PostgresStore, workers: int = 4, lease: float = 30.0) -> None:
        self.store = store
        self.workers = max(0, workers)
        self.lease = lease
        self.token = uuid.uuid4().hex[:12]
        self.app = App(
            connector=PsycopgConnector(
                conninfo=store.url,
                min_size=1,
                max_size=4,
                kwargs={"connect_timeout": 10},
                timeout=5.0,
                configure=_relaxed,
                pool_factory=_unchecked_pool,
            )
        )
        self.task = self.app.task(name=TASK, queue=QUEUE, pass_context=True, retry=_Backoff())(self._run)
        self.deferrer = JobManager(SyncPsycopgConnector())  # defers on the store's connection only
        self._handler: Callable[[Job], Any] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._stopping = threading.Event()
        self._running: set[int] = set()  # ids of the jobs this process is executing
        self._running_lock = threading.Lock()

    # -- the queue contract --------------------------------------------------------------------------
    def start(self, handler: Callable[[Job], Any]) -> None:
        self._handler = handler
        if self.workers and self._thread is None:
            self._thread = threading.Thread(target=self._thread_main, name="openexperts-pg-worker", daemon=True)
            self._thread.start()

    def submit(self, job: Job, lane: str | None = None) -> None:
        """Defer ``job`` in the caller's ``store.transaction()`` (one of its own otherwise)."""
        deferred = self.task.configure(lock=lane, task_kwargs={"run_id": job.run_id}).job
        with self.store.transaction():
            self.deferrer.defer_job(deferred, connection=self.store.connection())

    def join(self, timeout: float | None = None) -> bool:
        """Wait until no job of the deployment is waiting or running; False on timeout."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            rows = self.store.query(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE queue_name = %s AND status IN ('todo', 'doing')",
                (QUEUE,),
            )
            if rows[0]["n"] == 0:
                return True
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop taking jobs; running ones finish or go back to the queue (the runtime is stopping them)."""
        self._stopping.set()
        if self._loop is not None and self._main is not None:
            self._loop.call_soon_threadsafe(self._main.cancel)
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    # -- the worker ----------------------------------------------------------------------------------
    def _run(self, context: JobContext, run_id: str) -> None:
        """procrastinate's task: execute the run as its owner; raise to requeue it when it is not finished."""
        assert self._handler is not None and context.job.id is not None
        with self._running_lock:
            self._running.add(context.job.id)
        try:
            self.store.claim(run_id, f"{self.token}:{context.job.id}:{context.job.attempts}")
            outcome = self._handler(Job(run_id))
        finally:
            self.store.release()
            with self._running_lock:
                self._running.discard(context.job.id)
        if outcome is not None and outcome.status not in TERMINAL:
            raise RunNotFinished(f"run {run_id} is {outcome.status}")

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        loop.set_default_executor(ThreadPoolExecutor(self.workers + 2, thread_name_prefix="openexperts-run"))
        self._loop = loop
        try:
            self._main = loop.create_task(self._supervise())
            loop.run_until_complete(self._main)
        except asyncio.CancelledError:
            pass
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _supervise(self) -> None:
        """Run procrastinate's worker and the janitor; restart them with backoff when the database goes away."""
        delay = 0.5
        while not self._stopping.is_set():
            worker = Worker(
                app=self.app,
                queues=[QUEUE],
                name=f"openexperts-{self.token}",
                concurrency=self.workers,
                install_signal_handlers=False,
                update_heartbeat_interval=max(self.lease / 5, 0.2),
                stalled_worker_timeout=self.lease,
                delete_jobs="successful",
                fetch_job_polling_interval=max(self.lease / 5, 0.2),
                listen_notify=True,
            )
            janitor = asyncio.create_task(self._janitor(worker))
            started = time.monotonic()
            try:
                async with self.app.open_async():
                    await worker.run()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database went away: wait, then start again
                reason = str(exc.__cause__ or exc).strip().splitlines() or [type(exc).__name__]
                log.warning("job worker stopped (%s); restarting in %.1f s", reason[0], delay)
            finally:
                janitor.cancel()
            if time.monotonic() - started > 60:
                delay = 0.5
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)

    async def _janitor(self, worker: Worker) -> None:
        """Keep the job table's statistics fresh (every second); every ``lease / 3`` seconds, hand back to the
        queue the jobs of workers silent for ``lease`` seconds, and the jobs this worker holds but no longer
        runs (seen twice, so a job between its fetch and its start is left alone)."""
        orphans: set[int] = set()
        rounds = max(round(self.lease / 3 / ANALYZE_EVERY), 1)
        await asyncio.sleep(0.5)  # the worker opens the pool
        for count in itertools.count():
            try:
                await self._analyze()
                if count % rounds == 0:
                    orphans = await self._requeue(worker, orphans)
            except Exception as exc:  # the database is away; the supervisor restarts everything
                log.debug("janitor: %s", exc)
            await asyncio.sleep(ANALYZE_EVERY)

    async def _requeue(self, worker: Worker, seen: set[int]) -> set[int]:
        """Hand back the jobs of stalled workers, and this worker's orphans also in ``seen``; its orphans now."""
        manager = self.app.job_manager
        held = await self.app.connector.execute_query_all_async(
            query="SELECT id FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status = 'doing' "
            "AND worker_id = %(worker)s",
            queue=QUEUE,
            worker=worker.worker_id,
        )
        with self._running_lock:
            orphans = {row["id"] for row in held} - self._running
        for job_id in orphans & seen:
            with contextlib.suppress(Exception):  # finished meanwhile
                await manager.retry_job_by_id_async(job_id, retry_at=utcnow())
                log.warning("job %s: its end was not recorded; back to the queue", job_id)
        for job in await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=self.lease):
            with contextlib.suppress(Exception):  # another janitor got there first
                await manager.retry_job(job)
                log.warning("run %s: its worker stopped answering; back to the queue", job.task_kwargs["run_id"])
        return orphans

    async def _analyze(self) -> None:
        """ANALYZE the job table after a burst: with the statistics of an empty table, taking a job sorts every
        queued one (5 ms with 2,000 queued, 0.2 ms with statistics), and autovacuum may wait a minute."""
        (row,) = await self.app.connector.execute_query_all_async(
            query="SELECT n_mod_since_analyze AS changed, n_live_tup AS live FROM pg_stat_user_tables "
            "WHERE relid = 'procrastinate_jobs'::regclass"
        )
        if row["changed"] > max(STALE_STATISTICS, row["live"] // 5):
            await self.app.connector.execute_query_async(query="ANALYZE procrastinate_jobs")
