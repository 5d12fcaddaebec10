"""The body of ``skill run``, free of click so the ``skillctl run`` fast path can call it too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_PROBLEMS = 0, 1
"""``agentpack.cli.clikit``'s codes, without importing click on the ``skillctl run`` fast path."""


def _passthrough(chunk: bytes) -> None:
    stream = getattr(sys.stderr, "buffer", None)
    if stream is None:
        sys.stderr.write(chunk.decode("utf-8", "replace"))
    else:
        stream.write(chunk)
    sys.stderr.flush()


def write_report(path: Path, report: dict[str, Any]) -> None:
    """``--report FILE``, in the format its suffix names as everywhere in agentpack: ``.json`` (and a suffix no
    reporter writes) the spec's run report; ``.html`` the run's page; ``.xml``, ``.sarif``, ``.txt``... that
    reporter, with the run as one case."""
    from agentpack.io.fsutil import atomic_write_json

    if path.suffix.lower() != ".json":
        from agentpack.cli.clikit import reporter_for_suffix  # click: only for a report other than the spec's JSON

        if reporter_for_suffix(path) != "json":
            from agentpack.cli.reportfile import write_run_report
            from agentpack.results.runs import build_run

            write_run_report(
                build_run(report, command="skill run", input=report["skill"]["path"], **_run(report)), path
            )
            return
    atomic_write_json(path, report)


def _run(report: dict[str, Any]) -> dict[str, Any]:
    """``build_run``'s arguments for one skill run: one case, passed when the run is ok."""
    skill, status = report["skill"], report["status"]
    messages = [
        (f"{e['pointer']}: " if e.get("pointer") else "") + str(e.get("message") or e.get("code") or "")
        for e in report.get("errors") or []
    ]
    case = {
        "suite": skill["id"],
        "id": "run",
        "name": f"{skill['id']} {skill.get('version') or ''}".strip(),
        "status": "passed" if status == "ok" else ("error" if status == "error" else "failed"),
        "duration_s": float(report.get("durationMs") or 0) / 1000,
        "message": "" if status == "ok" else f"{status}: " + "; ".join(messages),
        "details": {k: report.get(k) for k in ("status", "errors", "exitCode", "signal", "input", "output", "logs")},
    }
    return {
        "format": "skillctl",
        "name": skill["id"],
        "cases": [case],
        "status": "error" if status == "error" else None,
        "message": case["message"] or None,
        "started_at": report.get("startedAt"),
        "duration_s": case["duration_s"],
    }


def _print_json(ok: bool, **fields: Any) -> None:
    from agentpack.io.envelope import dumps, envelope  # clikit's envelope, without importing click

    sys.stdout.write(dumps(envelope("skill run", ok, **fields)) + "\n")
    sys.stdout.flush()


def _error_fields(exc: Exception) -> dict[str, Any]:
    """The envelope's ``error`` for an error that stopped the run before it started (as ``agentpack``'s)."""
    error = {"message": getattr(exc, "message", str(exc))}
    for field in ("file", "line", "column", "hint"):
        if getattr(exc, field, None) is not None:
            error[field] = getattr(exc, field)
    return error


def run_command(
    *,
    root: str | None,
    ref: str,
    input_file: str,
    output_file: Path | None = None,
    timeout_ms: int | None = None,
    workspace: Path | None = None,
    report_file: Path | None = None,
    cache: bool = False,
    cache_dir: Path | None = None,
    check_determinism: bool = False,
    quiet_logs: bool = False,
    as_json: bool = False,
    require_sandbox: bool = False,
) -> int:
    """Run one skill as the CLI does; returns the exit status (AgentpackError for usage and I/O errors)."""
    from agentpack.io.errors import AgentpackError

    from .library import find_skill
    from .prepare import prepare
    from .runner import RunOptions, run_prepared

    try:
        prepared = prepare(find_skill(ref, root))
        try:
            raw = sys.stdin.buffer.read() if input_file == "-" else Path(input_file).read_bytes()
        except OSError as exc:
            raise AgentpackError(f"cannot read the input: {exc.strerror or exc}", file=input_file) from None
    except AgentpackError as exc:
        if as_json:  # a script reading stdout sees why the skill did not run, as for every --json command
            _print_json(False, error=_error_fields(exc))
        raise
    options = RunOptions(
        workspace=workspace or Path.cwd(),
        timeout_ms=timeout_ms,
        cache=cache,
        cache_dir=cache_dir,
        check_determinism=check_determinism,
        on_stderr=None if (quiet_logs or as_json) else _passthrough,
        require_sandbox=require_sandbox,
    )
    result = run_prepared(prepared, options, raw=raw)
    if report_file:
        write_report(Path(report_file), result.report)
    if result.ok and output_file:
        from agentpack.io.fsutil import atomic_write_bytes

        atomic_write_bytes(output_file, json.dumps(result.output, indent=2, ensure_ascii=False).encode() + b"\n")
    if as_json:
        _print_json(result.ok, status=result.status, output=result.output, report=result.report)
    elif result.ok and not output_file:
        sys.stdout.write(json.dumps(result.output, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    if result.ok:
        return EXIT_OK
    if not as_json:
        for error in result.report["errors"][:5]:
            where = f"{error['pointer']}: " if error.get("pointer") else ""
            sys.stderr.write(f"error: {prepared.skill.id}: {result.status}: {where}{error['message']}\n")
        sys.stderr.flush()
    return EXIT_PROBLEMS
