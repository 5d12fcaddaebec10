"""``agentpack rpc``: validate manifests, run them against agents, and check agents for conformance."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

from agentpack.cli.clikit import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    Recording,
    emit_json,
    emit_report,
    envelope,
    group,
    host,
    jobs_option,
    output_option,
    record_options,
    report_option,
)
from agentpack.io import console

# shared parameter types: each click.Path() costs gettext look-ups (file system stats) when built
EXISTING = click.Path(exists=True, path_type=Path)
OUT_FILE = click.Path(dir_okay=False, path_type=Path)


class _Seconds(click.ParamType):
    """A positive, finite number of seconds up to a week (``manifest.parse_seconds``)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from .manifest.model import SECONDS_LIMIT, SECONDS_RULE, parse_seconds

        seconds = parse_seconds(value)
        if seconds is None:
            self.fail(f"must be {SECONDS_RULE}, got {value!r} ({SECONDS_LIMIT})", param, ctx)
        return seconds


SECONDS = _Seconds()


@group()
def rpc() -> None:
    """Run agent evaluation manifests over JSON-RPC (stdio or Streamable HTTP).

    \b
    Examples:
      agentpack rpc init my_eval && agentpack rpc run -m my_eval/manifest.yaml
      agentpack rpc validate manifest.yaml --portable
      agentpack rpc run -m manifest.yaml --report out.html --json-out out.json
      agentpack rpc conformance "python agent.py"
      agentpack rpc doctor manifest.yaml
    """


@rpc.command()
@click.argument("manifests", nargs=-1, required=True, type=EXISTING)
@click.option(
    "--strict",
    is_flag=True,
    help="Also require manifest_version, graders on every step, current field names and a command found on PATH.",
)
@click.option(
    "--portable",
    is_flag=True,
    help="Also flag every feature ecp-runtime 0.10 would reject (errors) or ignore (warnings).",
)
@output_option()
def validate(manifests: tuple[Path, ...], strict: bool, portable: bool, output: str) -> None:
    """Validate manifests without running an agent; exit 1 when any has an error.

    \b
    Examples:
      agentpack rpc validate manifest.yaml
      agentpack rpc validate evals/*.yaml --strict --json
      agentpack rpc validate manifest.yaml --portable    # runs under ecp-runtime too?
    """
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.kernel.models import Report, ValidationItem

    from .api import validate_manifest

    h = host()
    items = []
    summaries = []
    for path in manifests:
        manifest, findings = validate_manifest(path, strict=strict, portable=portable, host=h)
        items.append(ValidationItem(path=str(path), format="agent-rpc", findings=findings))
        if manifest is not None:
            steps = sum(len(s.steps) for s in manifest.scenarios)
            graders = sum(len(st.graders) for s in manifest.scenarios for st in s.steps)
            summaries.append(
                f"{path}: {manifest.name!r}: {len(manifest.scenarios)} scenarios, {steps} steps, "
                f"{graders} graders, target {manifest.target.describe()}"
            )
    report = Report(command="rpc validate", generated_at=SYSTEM_CLOCK.now(), items=items)
    emit_report(report, output)
    if output == "text":
        for line in summaries:
            click.echo(line)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


def _sigterm_as_interrupt() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. in-process tests from a worker)
        pass


def _text_summary(report: dict[str, Any]) -> str:
    from agentpack.results.status import TONE

    from .report import words

    t, lat = report["totals"], report["latency"]
    said = words(report)
    tone = {"pass": "passed", "fail": "failed", "error": "error"}.get(TONE.get(said["verdict"], ""), "skipped")
    verdict = console.style(said["verdict"].upper(), tone)
    rate = f" ({said['rate']})" if said["rate"] else ""
    not_run = f", {t['skipped']} not run" if t["skipped"] else ""
    lines = [
        f"{report['manifest']['name']}: {verdict}  {t['passed']}/{t['scenarios']} scenarios passed{rate}{not_run}, "
        f"checks {t['checks_passed']}/{t['checks_total']}, "
        f"{t['steps_executed']} steps in {report['run']['duration_ms'] / 1000:.2f} s "
        f"(mean {lat['mean_ms']:.2f} ms/step)"
    ]
    for s in report["scenarios"]:
        mark = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "NOT RUN"}[s["status"]]
        flaky = " (flaky)" if s["flaky"] else ""
        first = s["message"].partition("\n")[0]  # the rest (an agent's stderr tail) once, in the error below
        mark = console.style(f"{mark:7}" if t["skipped"] else f"{mark:5}", s["status"])
        lines.append(f"  {mark} {s['id']}{flaky}" + (f": {first}" if first else ""))
    agent = report["agent"]
    if agent:
        lines.append(f"agent: {agent['name']} (protocol {agent['protocol_version']})")
    if report["exit_reason"] != "ok":
        lines.append(f"exit reason: {report['exit_reason']}")
    lines += [f"warning: {w}" for w in report["warnings"]]
    return "\n".join(lines) + "\n"


@rpc.command()
@click.argument("manifest_arg", required=False, metavar="[MANIFEST]", type=EXISTING)
@click.option("-m", "--manifest", type=EXISTING, help="The manifest YAML file.")
@report_option(
    "Also write a report; its format follows the suffix: .html (the run's page, as agentpack view shows it), "
    ".json (the native report), .xml (JUnit), or a registered reporter's (.sarif, .txt, ...)."
)
@click.option("--json-out", type=OUT_FILE, help="Write the native JSON report here.")
@click.option("--junit", type=OUT_FILE, help="Write a JUnit XML report here.")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="TEXT",
    help="Only scenarios whose name contains TEXT or that have tag TEXT ('tag:x' for tags only). Repeatable.",
)
@jobs_option("Scenarios in parallel (each worker has its own agent process).")
@click.option(
    "--timeout",
    type=SECONDS,
    help="Per-call timeout in seconds (overrides the manifest and AGENTPACK_AGENT_RPC_TIMEOUT).",
)
@click.option("--max-duration", type=SECONDS, help="Budget for the whole run, seconds.")
@click.option("--isolation", type=click.Choice(["reset", "process"]), help="Override the manifest's isolation.")
@click.option("--executor", default="local", show_default=True, help="Where scenarios run (a registered executor).")
@output_option(choices=("text", "json"), command="rpc run")
@record_options()
@click.option("--ray-address", metavar="ADDR", help="--executor ray: the cluster (default: RAY_ADDRESS).")
@click.option("--ray-local", is_flag=True, help="--executor ray: start a throwaway Ray instance on this machine.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first scenario that fails or errs.")
def run(
    manifest_arg: Path | None,
    manifest: Path | None,
    report_file: Path | None,
    json_out: Path | None,
    junit: Path | None,
    filters: tuple[str, ...],
    jobs: int,
    timeout: float | None,
    max_duration: float | None,
    isolation: str | None,
    executor: str,
    output: str,
    recording: Recording,
    ray_address: str | None,
    ray_local: bool,
    fail_fast: bool,
) -> None:
    """Run a manifest's scenarios against its agent and grade every step.

    Exit status: 0 all scenarios passed, 1 checks failed, 2 bad manifest or
    unreachable agent, 130 interrupted. Requested reports are always written.

    \b
    Examples:
      agentpack rpc run -m manifest.yaml --report out.html --json-out out.json
      agentpack rpc run manifest.yaml --filter smoke -j 4 --junit junit.xml
      agentpack rpc run manifest.yaml --executor ray --ray-address 10.0.0.5:6379 -j 32
    """
    from agentpack.io import console

    from .api import open_manifest, require_manifest, running
    from .containment import exclusive

    path = manifest or manifest_arg
    if path is None:
        raise click.UsageError("give the manifest: agentpack rpc run -m manifest.yaml")
    ray = {"address": ray_address, "local": ray_local}
    if executor != "ray" and any(ray.values()):
        raise click.UsageError("--ray-address and --ray-local go with --executor ray")
    as_json = output == "json"
    if as_json:
        console.QUIET = True
    _sigterm_as_interrupt()
    log = console.logger(__name__)
    h = host()
    log.info("rpc run %s: starting the agent", path)
    with exclusive(executor == "local"):  # this process exists for the run: what the agents leave is the run's
        if executor == "local":
            loaded, transport = open_manifest(path, host=h)  # the agent starts here, the rest loads while it does
        else:  # the executor starts agents where it runs scenarios
            loaded, transport = require_manifest(path, host=h), None
        from . import outputs, runlog
        from .report import dumps, unreachable
        from .runner import RunOptions

        total = len(loaded.scenarios)
        log.info("rpc run %s: %d scenarios, jobs %d, executor %s", loaded.name, total, jobs, executor)
        with console.progress(f"{loaded.name}: scenarios", total=total) as bar:

            def finished(record: dict[str, Any]) -> None:
                bar.update(description=f"{loaded.name}: {record['id']} {record['status']}")
                bar.advance()
                log.info("scenario %s: %s", record["id"], record["status"])

            options = RunOptions(
                jobs=jobs,
                filters=list(filters),
                executor=executor,
                step_timeout=timeout,
                max_duration=max_duration,
                isolation=isolation,
                on_result=finished,
                executor_options={k: v for k, v in ray.items() if v},
                fail_fast=fail_fast,
            )
            settings = {
                "judge": loaded.judge,
                "jobs": jobs,
                "filters": list(filters),
                "executor": executor,
                "timeout": timeout,
            }
            page = report_file is not None and report_file.suffix.lower() in (".html", ".htm")
            with running(path, options, manifest=loaded, transport=transport, host=h) as report:
                bar.phase(f"{loaded.name}: writing reports")
                text = dumps(report) if as_json or json_out else ""  # reports are written while the agent exits
                run_record = runlog.build(report, path, settings) if recording.enabled or page else None
                if json_out:
                    outputs.write_text(json_out, text)
                if report_file:
                    outputs.write_report(report, report_file, text=text or None, run=run_record)
                if junit:
                    outputs.write_text(junit, outputs.junit(report))
                bar.phase(f"{loaded.name}: stopping the agent")
    with console.styling(sys.stdout):
        summary = text if as_json else _text_summary(report)
    click.echo(summary, nl=False)
    verdict = "passed" if report["ok"] else "failed"
    log.info("rpc run %s: %s (exit reason %s)", loaded.name, verdict, report["exit_reason"])
    if run_record is not None:
        runlog.save(run_record, recording)
    if report["run"]["interrupted"]:
        raise SystemExit(EXIT_INTERRUPTED)
    problem = unreachable(report)
    if problem:
        click.echo(f"error: {problem}", err=True)
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_OK if report["ok"] else EXIT_PROBLEMS)


@rpc.command()
@click.argument("target", required=False)
@click.option("-t", "--target", "target_option", metavar="TARGET", help="TARGET, as ecp conformance takes it.")
@click.option("--input", "step_input", default="hello", show_default=True, help="Input for the step calls.")
@click.option("--timeout", default=10.0, show_default=True, type=SECONDS, help="Per-call timeout in seconds.")
@click.option("--shell", is_flag=True, help="Run TARGET through /bin/sh.")
@click.option("--cwd", type=click.Path(exists=True, file_okay=False), help="Working directory of the agent.")
@click.option("--json-out", type=OUT_FILE, help="Write the JSON report here.")
@output_option(choices=("text", "json"), command="rpc conformance")
def conformance(
    target: str | None,
    target_option: str | None,
    step_input: str,
    timeout: float,
    shell: bool,
    cwd: str | None,
    json_out: Path | None,
    output: str,
) -> None:
    """Check an agent (a command or an http(s)://.../ecp URL) against the protocol.

    Exit status: 0 conformant, 1 a required check failed, 2 unreachable (as
    for rpc run: it cannot start, or gives no answer to agent/initialize).
    The agent starts in the current directory unless --cwd says otherwise.

    \b
    Examples:
      agentpack rpc conformance "python agent.py"
      agentpack rpc conformance http://127.0.0.1:8765/ecp --json
      agentpack rpc conformance --target "python examples/demo/agent.py"
    """
    import json

    from agentpack.io.errors import AgentpackError

    from .conformance import run_conformance
    from .manifest.model import make_target
    from .outputs import write_text

    if (target is None) == (target_option is None):
        raise click.UsageError("give the agent once: agentpack rpc conformance TARGET (or --target TARGET)")
    try:
        spec = make_target(target or target_option or "", shell=shell, cwd=cwd)
    except ValueError as exc:
        raise AgentpackError(f"TARGET: {exc}") from None
    result = run_conformance(spec, step_input=step_input, timeout=timeout)
    if json_out:
        report = envelope("rpc conformance", result["conformant"], **result)
        write_text(json_out, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if output == "json":
        emit_json("rpc conformance", result["conformant"], **result)
    else:
        for check in result["checks"]:
            mark = "PASS" if check["passed"] else ("FAIL" if check["required"] else "WARN")
            click.echo(f"{mark:4} {check['name']}: {check['message']}")
        click.echo(
            f"{'conformant' if result['conformant'] else 'NOT conformant'}: "
            f"{result['passed']}/{result['total']} checks passed"
        )
    if not result["reachable"]:
        click.echo(f"error: {result['checks'][0]['message']}", err=True)
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_OK if result["conformant"] else EXIT_PROBLEMS)


@rpc.command()
@click.argument("directory", default="agent_eval", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace agent.py and manifest.yaml if they exist.")
def init(directory: Path, force: bool) -> None:
    """Create a starter evaluation in DIRECTORY (default agent_eval): an SDK agent and a manifest that passes.

    The manifest sets 'cwd: .', so it runs from any directory.

    \b
    Examples:
      agentpack rpc init
      agentpack rpc init evals/support --force
    """
    from .starter import write_starter

    for path in write_starter(directory, force=force):
        click.echo(f"created {path}")
    manifest = directory / "manifest.yaml"
    click.echo(f"next: agentpack rpc run -m {manifest}")
    click.echo(f"      agentpack rpc validate {manifest}")
    click.echo("      (--portable lists what ecp-runtime would not run: here 'cwd', an agentpack key)")


@rpc.command()
@click.argument("manifest", required=False, type=EXISTING)
@click.option("--no-start", is_flag=True, help="Do not start the manifest's agent.")
@output_option(choices=("text", "json"), command="rpc doctor")
def doctor(manifest: Path | None, no_start: bool, output: str) -> None:
    """Check the environment a run needs and, given MANIFEST, its agent; exit 1 when a run would fail.

    \b
    Examples:
      agentpack rpc doctor
      agentpack rpc doctor manifest.yaml --json
    """
    from .doctor import run_doctor

    checks = run_doctor(manifest, start=not no_start, host=host())
    ok = not any(check.status == "fail" for check in checks)
    if output == "json":
        emit_json("rpc doctor", ok, checks=[check._asdict() for check in checks])
    else:
        for check in checks:
            click.echo(f"{check.status.upper():4} {check.name}: {check.detail}")
    raise SystemExit(EXIT_OK if ok else EXIT_PROBLEMS)
