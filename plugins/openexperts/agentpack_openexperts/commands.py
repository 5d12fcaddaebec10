"""What the ``experts`` commands compute, shared by the CLI and the MCP tools.

The ``*_envelope`` functions build what a command prints with ``--json`` (the
versioned envelope of ``agentpack.cli.clikit``), so an MCP tool returns exactly the
payload of its CLI command.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.cli.clikit import envelope
from agentpack.io.errors import AgentpackError

from .explain import explain
from .model import ExpertPackage
from .names import FORMAT
from .runtime import BindContext, ExpertRuntime, RunOutcome
from .runtime.bindings import load_bindings_file

if TYPE_CHECKING:
    from agentpack.kernel.host import Host


def load(host: Host, path: Path) -> ExpertPackage:
    """The package at ``path``, as ``agentpack_load`` returns it; an ``AgentpackError`` if its manifest is unusable."""
    package: ExpertPackage = host.load(path, FORMAT).data
    if not isinstance(package.manifest.data, dict):
        first = package.findings[0] if package.findings else None
        raise AgentpackError(
            first.message if first else "not an expert package",
            file=first.file if first else None,
            line=first.line if first else None,
        )
    return package


def explain_envelope(
    package: ExpertPackage, *, process: str | None = None, operation: str | None = None, trigger: str | None = None
) -> dict[str, Any]:
    """``experts explain --json``: effective values and where each came from.

    ``AgentpackError`` when a file of the package could not be read: its values would be missing silently.
    """
    unreadable = [f for f in package.findings if f.severity == "error"]
    if unreadable:
        first = unreadable[0]
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise AgentpackError(
            f"the package cannot be read: {first.code} {first.message}{more}",
            file=first.file,
            line=first.line,
            hint="agentpack validate PACK lists every problem",
        )
    return envelope("experts explain", True, **explain(package, process=process, operation=operation, trigger=trigger))


def run_envelope(command: str, outcome: RunOutcome) -> dict[str, Any]:
    """``experts run|dry-run|dead-letters replay --json``: one run's outcome."""
    return envelope(f"experts {command}", outcome.ok, run=outcome.to_json())


def make_runtime(
    package: ExpertPackage,
    host: Host,
    *,
    bindings: Path | None = None,
    driver: str | None = None,
    script: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    broker: str | None = None,
    workdir: Path | None = None,
    default_driver: str = "plan",
    default_broker: str = "prompt",
    listeners: tuple[Callable[[dict[str, Any]], None], ...] = (),
    **extra: Any,
) -> ExpertRuntime:
    """A runtime from the commands' options: ``--driver`` (``scripted`` when only ``--script`` is
    given), ``--approve``, ``--workdir`` and the tools of ``--bindings``."""
    options = {"script": script, "model": model, "base_url": base_url, "api_key_env": api_key_env}
    rt = ExpertRuntime(
        package,
        driver=driver or ("scripted" if script else default_driver),
        driver_options=options,
        broker=broker or default_broker,
        workdir=workdir,
        listeners=listeners,
        host=host,
        **extra,
    )
    if bindings:
        try:
            rt.tools = load_bindings_file(bindings, BindContext(bindings.parent, rt))
        except BaseException:
            rt.stop()
            raise
    return rt


def dry_run(package: ExpertPackage, host: Host, process: str, inputs: dict[str, Any], **options: Any) -> RunOutcome:
    """Plan ``process`` with one attempt: auto operations run when bound, confirm and manual ones are
    described. A throwaway workdir unless ``workdir`` is given; confirm operations are rejected by default."""
    with tempfile.TemporaryDirectory(prefix="openexperts-dry-run-") as tmp:
        options["workdir"] = options.get("workdir") or Path(tmp)
        rt = make_runtime(package, host, default_broker="reject", **options)
        try:
            return rt.run_process(process, inputs, dry_run=True)
        finally:
            rt.stop()
