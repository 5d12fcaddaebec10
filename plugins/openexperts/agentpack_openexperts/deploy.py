"""A deployment on several processes: ``experts serve`` (the intake), ``experts worker``, ``experts approvals``,
and the ``--store`` option of the commands that read run state.

With ``--store postgresql://...`` (or ``$AGENTPACK_OPENEXPERTS_STORE``) every process of
the deployment shares one database for the queue, the run state and approvals.
Without it, ``serve`` is the embedded runtime (``experts run PACK``) and the commands
read the SQLite file of the workdir. Nothing here imports psycopg or procrastinate:
the runtime does, when a store URL is given.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from agentpack.cli.clikit import CONTEXT_SETTINGS, emit_json, output_option
from agentpack.io.clock import SYSTEM_CLOCK
from agentpack.io.errors import AgentpackError

from .names import WORKDIR

ENV = "AGENTPACK_OPENEXPERTS_STORE"
STORE = click.option(
    "--store",
    metavar="URL",
    envvar=ENV,
    help=f"A postgresql:// URL shared by every process of the deployment (or ${ENV}). "
    "Default: the SQLite file in the workdir.",
)
PACK = click.argument("pack", type=click.Path(exists=True, path_type=Path))
WORKDIR_OPTION = click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), help=f"Runtime directory. Default: PACK/{WORKDIR}"
)
OUTPUT = output_option(choices=("text", "json"))
PORT = click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port for webhooks and approvals (0: any free one).",
)


def duration_option(until: str) -> Callable[[Any], Any]:
    """``--duration SECONDS``: serve or work that long, then stop (default: ``until``)."""
    return click.option(
        "--duration",
        type=click.FloatRange(min=0),
        help=f"Run for this many seconds, then stop (default: until {until}).",
    )


def open_store(pack: Path, workdir: Path | None, store: str | None, load: Callable[[Path], Any]) -> Any:
    """The run state to read: the database at ``store``, else ``runtime.db`` in the workdir."""
    from .loader import package_root
    from .runtime.backends import open_backend

    package = load(pack) if store else None
    name = (package.name or package.root.name) if package is not None else ""
    folder = workdir or package_root(pack) / WORKDIR
    return open_backend(store, folder, name, SYSTEM_CLOCK, workers=0, create=False).store


def replay_queued(rt: Any, letter_id: str) -> dict[str, Any]:
    """Queue a dead letter again as a new run, for the deployment's workers."""
    letter = next((d for d in rt.store.dead_letters(include_replayed=True) if d["id"] == letter_id), None)
    if letter is None:
        raise AgentpackError(f"no dead letter '{letter_id}' (list them with 'agentpack experts dead-letters list')")
    if letter["replayed_as"]:
        raise AgentpackError(f"dead letter '{letter_id}' was already replayed as run {letter['replayed_as']}")
    with rt.store.transaction():
        run_id = rt.submit(letter["process"], letter["inputs"], trigger=letter["trigger"], payload=letter["payload"])
        rt.store.mark_replayed(letter_id, run_id)
    return {"dead_letter": letter_id, "run_id": run_id, "queued": True}


def settle_queued(rt: Any, run_id: str, happened: bool, result: Any) -> list[int]:
    """Settle a held run's unknown calls (``idempotency.settle``) and queue the run again for the workers."""
    from .runtime.idempotency import settle
    from .runtime.queue import Job

    with rt.store.transaction():
        seqs = settle(rt.store, run_id, happened, result, rt.now())
        rt.queue.submit(Job(run_id), rt.store.run(run_id)["lane"])
    return seqs


def _printer() -> Callable[[dict[str, Any]], None]:
    """A listener printing each delivered message as one JSON line."""
    lock = threading.Lock()

    def emit(message: dict[str, Any]) -> None:
        with lock:
            click.echo(json.dumps(message, sort_keys=True, default=str))

    return emit


def _until_stopped(duration: float | None) -> None:
    """Block until ``duration`` seconds passed, or SIGTERM/SIGINT."""
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait(duration)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def add_commands(
    group: click.Group,
    *,
    runtime_options: Callable[[Any], Any],
    server_options: Callable[[Any], Any],
    server_keys: tuple[str, ...],
    make_runtime: Callable[..., Any],
    load: Callable[[Path], Any],
    announce: Callable[[Any], None],
) -> None:
    """Add ``serve``, ``worker`` and ``approvals`` to the ``experts`` group (the options, the runtime and the
    announcement of a server are the ones ``experts run`` uses; ``server_keys`` name the server options)."""

    @group.command()
    @PACK
    @STORE
    @runtime_options
    @PORT
    @server_options
    @duration_option("stopped")
    @click.option(
        "--workers",
        type=click.IntRange(min=0),
        help="Runs this process executes at once. Default: 4 without --store; 0 with it (intake only).",
    )
    @OUTPUT
    def serve(
        pack: Path,
        store: str | None,
        port: int,
        duration: float | None,
        workers: int | None,
        output: str,
        **options: Any,
    ) -> None:
        """Serve the triggers: webhooks, channels and cron schedules (the intake of a deployment).

        Every accepted event becomes a run in the queue. With --store the queue is in
        PostgreSQL and `experts worker` processes run it; any number of intakes and workers
        may share one database, each cron tick fires once. Without --store this is
        `experts run PACK`: one process, its own worker threads, SQLite in the workdir.
        Deliveries are printed as JSON lines; with --json an error at start is the envelope.

        \b
        Examples:
          agentpack experts serve my-expert --store postgresql://oe@db/oe --port 8080
          agentpack experts serve my-expert --bindings b.yaml --approve http      # embedded
        """
        from .runtime.serverconfig import ServerSettings

        if workers == 0 and not store:
            raise click.UsageError(f"--workers 0 (an intake only) needs --store postgresql://... (or ${ENV})")
        server = {name: options.pop(name) for name in server_keys}
        package = load(pack)
        count = workers if workers is not None else (0 if store else 4)
        rt = make_runtime(
            package, store=store, workers=count, listeners=(_printer(),), default_broker="http", **options
        )
        try:
            rt.start(http=True, server=ServerSettings(port=port, **server))
            announce(rt)
            if store:
                click.echo(f"  store {rt.store.path}, {count} worker threads here", err=True)
            for name, why in rt.inactive.items():
                click.echo(f"  trigger {name} inactive: {why}", err=True)
            _until_stopped(duration)
        finally:
            click.echo("stopping", err=True)
            rt.stop()

    @group.command()
    @PACK
    @STORE
    @runtime_options
    @click.option("--workers", default=4, show_default=True, type=click.IntRange(min=1), help="Runs at once.")
    @click.option(
        "--lease",
        default=30.0,
        show_default=True,
        type=click.FloatRange(min=0.5),
        help="Seconds without a heartbeat after which a worker is presumed dead and its runs resume elsewhere.",
    )
    @duration_option("stopped")
    @OUTPUT
    def worker(
        pack: Path,
        store: str | None,
        workers: int,
        lease: float,
        duration: float | None,
        output: str,
        **options: Any,
    ) -> None:
        """Run the queued runs of a deployment (any number of workers, on any machines).

        Needs --store (the PostgreSQL database of `experts serve`) and the tool bindings.
        Deliveries are printed as JSON lines (with --json an error at start is the envelope).
        SIGTERM or Ctrl-C stops taking runs; the runs in progress go back to the queue and
        resume on another worker.

        \b
        Example:
          agentpack experts worker my-expert --store postgresql://oe@db/oe --bindings b.yaml --workers 8
        """
        if not store:
            raise click.UsageError(f"a worker needs --store postgresql://... (or ${ENV})")
        package = load(pack)
        rt = make_runtime(
            package,
            store=store,
            workers=workers,
            queue_options={"lease": lease},
            listeners=(_printer(),),
            default_broker="http",
            **options,
        )
        try:
            rt.start(cron=False)
            click.echo(f"worker for {package.name} on {rt.store.path}: {workers} runs at a time", err=True)
            _until_stopped(duration)
        finally:
            click.echo("stopping", err=True)
            rt.stop()

    @group.group(context_settings=CONTEXT_SETTINGS)
    def approvals() -> None:
        """List and decide approval requests of confirm-tier operations."""

    @approvals.command(name="list")
    @PACK
    @STORE
    @WORKDIR_OPTION
    @OUTPUT
    def approvals_list(pack: Path, store: str | None, workdir: Path | None, output: str) -> None:
        """List pending approval requests.

        With --store: the requests of every worker. Without: the requests announced by runs
        of the workdir that are still running (decide them through the serving process).

        \b
        Example:
          agentpack experts approvals list my-expert --store postgresql://oe@db/oe --json
        """
        backend = open_store(pack, workdir, store, load)
        try:
            rows = _pending(backend, bool(store))
        finally:
            backend.close()
        if output == "json":
            emit_json("experts approvals list", True, approvals=rows)
            return
        for row in rows:
            click.echo(f"{row['id']}  {row['run_id']}  {row['operation']}  {row['description']}")
        if not rows:
            click.echo("no pending approvals")

    def _decide(approved: bool) -> Callable[..., None]:
        verb = "approve" if approved else "reject"

        @PACK
        @click.argument("request_id")
        @STORE
        @click.option("--by", default="cli", show_default=True, help="Who decides (recorded).")
        @click.option("--note", default="", help="A note recorded with the decision.")
        @OUTPUT
        def decide(pack: Path, request_id: str, store: str | None, by: str, note: str, output: str) -> None:
            if not store:
                raise AgentpackError(
                    "without --store, approvals wait in the serving process",
                    hint=f'POST {{its URL}}/approvals/{request_id} {{"approve": {str(approved).lower()}}} '
                    "with its bearer token",
                )
            backend = open_store(pack, None, store, load)
            try:
                done = backend.decide_approval(request_id, approved, by, note, time.time())
            finally:
                backend.close()
            if not done:
                raise AgentpackError(f"no pending approval '{request_id}' (list them with 'experts approvals list')")
            if output == "json":
                emit_json(f"experts approvals {verb}", True, id=request_id, approved=approved)
            else:
                click.echo(f"{request_id}: {'approved' if approved else 'rejected'}")

        decide.__doc__ = (
            f"{verb.capitalize()} a pending request; the waiting run continues on its worker.\n\n"
            f"\b\nExample:\n  agentpack experts approvals {verb} my-expert approval-18c2-0007 --store postgresql://oe@db/oe"
        )
        return decide

    approvals.command(name="approve")(_decide(True))
    approvals.command(name="reject")(_decide(False))


def _pending(store: Any, shared: bool) -> list[dict[str, Any]]:
    """Pending requests: the approvals table of a shared store, or those announced by running local runs."""
    keep = ("id", "run_id", "process", "operation", "arguments", "description", "created")
    if shared:
        return [{k: row[k] for k in keep} for row in store.approvals()]
    running = {r["run_id"] for r in store.runs(("running",))}
    return [
        {k: m["data"].get(k) for k in keep} for m in store.messages(kind="approval_request") if m["run_id"] in running
    ]
