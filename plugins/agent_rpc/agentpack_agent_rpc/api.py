"""The plugin's entry points for code: validate a manifest, run it, check an agent's conformance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.errors import AgentpackError

from .manifest import Manifest, load_manifest
from .runner import RunOptions, Runner


def graders() -> dict:
    from agentpack.plugins import get_host

    from .graders.base import collect_graders

    return collect_graders(get_host().pm)


def executors() -> dict:
    from agentpack.plugins import get_host

    from .executors import collect_executors

    return collect_executors(get_host().pm)


def validate_manifest(path: str | Path, *, strict: bool = False):
    """``(Manifest or None, findings)`` for the manifest at ``path`` (a file or a folder with manifest.yaml)."""
    from .manifest import manifest_file

    path = Path(path)
    target = manifest_file(path) or path
    return load_manifest(target, graders(), strict=strict)


def require_manifest(path: str | Path) -> Manifest:
    """The manifest, or an ``AgentpackError`` (exit 2) pointing at the first error."""
    manifest, findings = validate_manifest(path)
    if manifest is None:
        errors = [f for f in findings if f.severity == "error"] or findings
        first = errors[0]
        more = f" (and {len(errors) - 1} more; run 'agentpack rpc validate')" if len(errors) > 1 else ""
        raise AgentpackError(f"invalid manifest: {first.message}{more}", file=first.file, line=first.line,
                             hint=first.hint)
    return manifest


def run_manifest(path: str | Path, options: RunOptions | None = None, *, suite: str | None = None,
                 manifest: Manifest | None = None) -> dict[str, Any]:
    """Run a manifest and return the native JSON report (schema ``report``)."""
    from .report import build_report

    manifest = manifest or require_manifest(path)
    options = options or RunOptions()
    if suite is not None and suite != manifest.name:
        raise AgentpackError(f"no suite '{suite}': this manifest's only suite is '{manifest.name}'")
    found = executors()
    if options.executor not in found:
        raise AgentpackError(f"unknown executor '{options.executor}'; available: {', '.join(sorted(found))}")
    runner = Runner(manifest, options, executor=found[options.executor].factory())
    return build_report(manifest, runner.run(), filters=options.filters)
