"""The plugin's entry points for code: validate a manifest, open it with its agent starting, run it.

Each function takes ``host``, the ``agentpack.kernel.host.Host`` whose plugins
registered the graders and executors to use (the CLI and the pack hooks pass
theirs); code outside agentpack may leave it out for the process-wide host.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError, YamlError

from .manifest.builder import early_target
from .manifest.loader import load_manifest, yaml_error_finding
from .manifest.model import Manifest, Target
from .manifest.reader import Document, document_head, manifest_file, parse_document, read_text
from .protocol import CallError

if TYPE_CHECKING:  # the runner loads after ``open_manifest`` has started the agent
    from agentpack.kernel.host import Host
    from agentpack.kernel.models import Finding

    from .executors import ExecutorInfo
    from .graders.base import GraderType
    from .runner import RunOptions


def _host(host: Host | None) -> Host:
    """``host``, or the process-wide one for callers outside agentpack (resolved only when needed)."""
    if host is not None:
        return host
    from agentpack.kernel.plugins import get_host

    return get_host()


def graders(host: Host | None = None) -> dict[str, GraderType]:
    """The registered grader types, by name."""
    from .graders.base import collect_graders

    return collect_graders(_host(host).pm)


def executors(host: Host | None = None) -> dict[str, ExecutorInfo]:
    """The registered executors, by name."""
    from .executors import collect_executors

    return collect_executors(_host(host).pm)


def validate_manifest(
    path: str | Path,
    *,
    strict: bool = False,
    portable: bool = False,
    document: Document | None = None,
    host: Host | None = None,
) -> tuple[Manifest | None, list[Finding]]:
    """``(Manifest or None, findings)`` for the manifest at ``path`` (a file or a folder with manifest.yaml).

    ``portable``: also flag what ecp-runtime 0.10 would reject or ignore. ``document``: the manifest already read
    and parsed (``Pack.data``), so it is not read again.
    """
    path = Path(path)
    file = manifest_file(path) or path
    return load_manifest(file, graders(host), strict=strict, portable=portable, document=document)


def require_manifest(path: str | Path, *, document: Document | None = None, host: Host | None = None) -> Manifest:
    """The manifest, or an ``AgentpackError`` (exit 2) pointing at the first error."""
    manifest, findings = validate_manifest(path, document=document, host=host)
    if manifest is None:
        raise _invalid(findings)
    return manifest


def _invalid(findings: list[Finding]) -> AgentpackError:
    errors = [f for f in findings if f.severity == "error"] or findings
    first = errors[0]
    more = f" (and {len(errors) - 1} more; run 'agentpack rpc validate')" if len(errors) > 1 else ""
    return AgentpackError(f"invalid manifest: {first.message}{more}", file=first.file, line=first.line, hint=first.hint)


def open_manifest(
    path: str | Path, *, document: Document | None = None, host: Host | None = None
) -> tuple[Manifest, Any]:
    """The validated manifest and, for a stdio target, its agent process already starting (else None).

    The agent is spawned as soon as the target is read (from the lines above
    ``scenarios:`` when they hold it, else from the parsed manifest), so its
    start-up overlaps parsing and validating the rest; an invalid manifest
    kills it before any request is sent. ``document``: the manifest already
    read and parsed (``Pack.data``), so the agent starts from it. Pass the
    transport to ``run_manifest(..., transport=)``, which closes it when no
    scenario uses it.
    """
    path = Path(path)
    file = manifest_file(path) or path
    early: Target | None = None
    transport = None
    try:
        try:
            if document is None:
                text, raw = read_text(file)
                head = document_head(text, file)
                if head is not None:
                    early, transport = _start(early_target(head, file))
                document = parse_document(text, raw, file)
                if head is None:
                    early, transport = _start(early_target(document[0], file))
            else:
                early, transport = _start(early_target(document[0], file))
        except YamlError as exc:
            raise _invalid([yaml_error_finding(exc, file)]) from None
        manifest = require_manifest(file, document=document, host=host)
    except BaseException:
        _discard(transport)
        raise
    if transport is not None and manifest.target != early:
        _discard(transport)
        transport = None
    return manifest, transport


def _start(target: Target | None) -> tuple[Target | None, Any]:
    """``(target, its transport)``, or ``(target, None)`` when there is none or it cannot start (the run reports it).

    The transport's ``scope`` (a new ``Containment``) goes on to the run.
    """
    if target is None:
        return None, None
    from .containment import Containment

    scope = Containment()
    try:
        return target, target.open(scope)
    except CallError:
        scope.close()
        return target, None


def _discard(transport: Any) -> None:
    """Kill an agent no run will use, and whatever it started."""
    if transport is not None:
        transport.kill()
        transport.close()
        if transport.scope is not None:
            transport.scope.close()


def run_manifest(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    suite: str | None = None,
    manifest: Manifest | None = None,
    transport: Any = None,
    host: Host | None = None,
) -> dict[str, Any]:
    """Run a manifest and return the native JSON report (schema ``report``).

    ``transport``: the agent already started for ``manifest.target`` (see ``open_manifest``).
    """
    with running(path, options, suite=suite, manifest=manifest, transport=transport, host=host) as report:
        return report


@contextmanager
def running(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    suite: str | None = None,
    manifest: Manifest | None = None,
    transport: Any = None,
    host: Host | None = None,
) -> Iterator[dict[str, Any]]:
    """``run_manifest`` whose report the ``with`` block gets while the agents are still shutting down.

    The block can write the report in that time; leaving it waits for the
    agents to exit and kills their process groups, even on an error.
    """
    from .report import build_report
    from .runner import Runner, RunOptions

    if manifest is None:
        manifest, transport = open_manifest(path, host=host)
    runner = None
    try:
        options = options or RunOptions()
        if suite is not None and suite != manifest.name:
            raise AgentpackError(f"no suite '{suite}': this manifest's only suite is '{manifest.name}'")
        found = executors(host)
        if options.executor not in found:
            raise AgentpackError(f"unknown executor '{options.executor}'; available: {', '.join(sorted(found))}")
        runner = Runner(manifest, options, executor=found[options.executor].factory(), transport=transport)
        transport = None  # the runner owns it now
        yield build_report(manifest, runner.run(), filters=options.filters)
    finally:
        _discard(transport)
        if runner is not None:
            runner.finish()
