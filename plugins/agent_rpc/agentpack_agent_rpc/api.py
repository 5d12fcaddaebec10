"""The plugin's entry points for code: validate a manifest, run it, check an agent's conformance."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.errors import AgentpackError

from .manifest import Manifest, load_manifest

if TYPE_CHECKING:  # the runner loads after ``open_manifest`` has started the agent
    from .runner import RunOptions


def graders() -> dict:
    from agentpack.plugins import get_host

    from .graders.base import collect_graders

    return collect_graders(get_host().pm)


def executors() -> dict:
    from agentpack.plugins import get_host

    from .executors import collect_executors

    return collect_executors(get_host().pm)


def validate_manifest(path: str | Path, *, strict: bool = False, document=None):
    """``(Manifest or None, findings)`` for the manifest at ``path`` (a file or a folder with manifest.yaml)."""
    from .manifest import manifest_file

    path = Path(path)
    target = manifest_file(path) or path
    return load_manifest(target, graders(), strict=strict, document=document)


def require_manifest(path: str | Path, *, document=None) -> Manifest:
    """The manifest, or an ``AgentpackError`` (exit 2) pointing at the first error."""
    manifest, findings = validate_manifest(path, document=document)
    if manifest is None:
        errors = [f for f in findings if f.severity == "error"] or findings
        first = errors[0]
        more = f" (and {len(errors) - 1} more; run 'agentpack rpc validate')" if len(errors) > 1 else ""
        raise AgentpackError(
            f"invalid manifest: {first.message}{more}", file=first.file, line=first.line, hint=first.hint
        )
    return manifest


def open_manifest(path: str | Path) -> tuple[Manifest, Any]:
    """The validated manifest and, for a stdio target, its agent process already starting (else None).

    The agent is spawned as soon as the target is read (from the lines above
    ``scenarios:`` when they hold it, else from the parsed manifest), so its
    start-up overlaps parsing and validating the rest; an invalid manifest
    kills it before any request is sent. Pass the transport to
    ``run_manifest(..., transport=)``, which closes it when no scenario uses it.
    """
    from agentpack.errors import YamlError
    from agentpack.yamlio import parse_yaml

    from .manifest import document_head, early_target, manifest_file, read_text

    path = Path(path)
    file = manifest_file(path) or path
    try:
        text, raw = read_text(file)
    except YamlError:
        return require_manifest(path), None  # reports the error with its location
    early, transport = None, None
    head = document_head(text, file)
    if head is not None:
        early, transport = _start(early_target(head, file))
    try:
        try:
            document = (parse_yaml(text, file=str(file)), raw)
        except YamlError:
            return require_manifest(path), None
        if head is None:
            early, transport = _start(early_target(document[0], file))
        manifest = require_manifest(path, document=document)
    except BaseException:
        if transport is not None:
            transport.kill()
            transport.close()
        raise
    if transport is not None and manifest.target != early:
        transport.kill()
        transport.close()
        transport = None
    return manifest, transport


def _start(target: Any) -> tuple[Any, Any]:
    """``(target, its transport)``, or ``(target, None)`` when there is none or it cannot start (the run reports it)."""
    from .protocol import CallError

    if target is None:
        return None, None
    try:
        return target, target.open()
    except CallError:
        return target, None


def run_manifest(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    suite: str | None = None,
    manifest: Manifest | None = None,
    transport: Any = None,
) -> dict[str, Any]:
    """Run a manifest and return the native JSON report (schema ``report``).

    ``transport``: the agent already started for ``manifest.target`` (see ``open_manifest``).
    """
    with running(path, options, suite=suite, manifest=manifest, transport=transport) as report:
        return report


@contextmanager
def running(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    suite: str | None = None,
    manifest: Manifest | None = None,
    transport: Any = None,
) -> Iterator[dict[str, Any]]:
    """``run_manifest`` whose report the ``with`` block gets while the agents are still shutting down.

    The block can write the report in that time; leaving it waits for the
    agents to exit and kills their process groups, even on an error.
    """
    from .report import build_report
    from .runner import Runner, RunOptions

    if manifest is None:
        manifest, transport = open_manifest(path)
    runner = None
    try:
        options = options or RunOptions()
        if suite is not None and suite != manifest.name:
            raise AgentpackError(f"no suite '{suite}': this manifest's only suite is '{manifest.name}'")
        found = executors()
        if options.executor not in found:
            raise AgentpackError(f"unknown executor '{options.executor}'; available: {', '.join(sorted(found))}")
        runner = Runner(manifest, options, executor=found[options.executor].factory(), transport=transport)
        transport = None  # the runner owns it now
        yield build_report(manifest, runner.run(), filters=options.filters)
    finally:
        if transport is not None:
            transport.kill()
            transport.close()
        if runner is not None:
            runner.finish()
