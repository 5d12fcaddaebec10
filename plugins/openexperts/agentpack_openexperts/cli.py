"""``agentpack experts ...``: explain, run, dry-run, export, runs, log and dead letters."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from agentpack.cli import CONTEXT_SETTINGS, EXIT_PROBLEMS, print_json
from agentpack.errors import AgentpackError

from .deploy import STORE, add_commands, open_store, replay_queued

PACK = click.argument("pack", type=click.Path(exists=True, path_type=Path))


def _envelope(command: str, ok: bool, **data: Any) -> dict[str, Any]:
    return {"schema_version": 1, "command": f"experts {command}", "ok": ok, **data}


def _load(pack: Path):
    from .loader import load_package

    package = load_package(pack)
    if package.manifest.data is None or not isinstance(package.manifest.data, dict):
        first = package.findings[0] if package.findings else None
        raise AgentpackError(
            first.message if first else "not an expert package",
            file=first.file if first else None,
            line=first.line if first else None,
        )
    return package


def _inputs(pairs: tuple[str, ...], inputs_file: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if inputs_file:
        text = sys.stdin.read() if inputs_file == "-" else Path(inputs_file).read_text(encoding="utf-8")
        try:
            values = json.loads(text)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--inputs") from None
        if not isinstance(values, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--inputs")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"'{pair}' is not KEY=VALUE", param_hint="--input")
        values[key] = value
    return values


def runtime_options(f):
    """Options shared by the commands that run a package."""
    options = [
        click.option(
            "--bindings",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Tool bindings YAML (python, skill or mcp per tool).",
        ),
        click.option("--driver", default=None, help="Agent driver: openai, scripted, plan, noop or a plugin's."),
        click.option("--script", type=click.Path(exists=True, dir_okay=False), help="Script for --driver scripted."),
        click.option("--model", help="Model for --driver openai."),
        click.option("--base-url", help="OpenAI-compatible base URL for --driver openai."),
        click.option(
            "--api-key-env",
            default="OPENAI_API_KEY",
            show_default=True,
            help="Environment variable holding the API key.",
        ),
        click.option(
            "--approve",
            "broker",
            default=None,
            help="Approval broker for confirm operations: prompt, http, approve, reject.",
        ),
        click.option(
            "--workdir",
            type=click.Path(file_okay=False, path_type=Path),
            help="Runtime directory (state, scratch, runtime.db). Default: PACK/.openexperts",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _runtime(
    package,
    *,
    bindings,
    driver,
    script,
    model,
    base_url,
    api_key_env,
    broker,
    workdir,
    default_driver="plan",
    default_broker="prompt",
    listeners=(),
    **extra,
):
    from .runtime import BindContext, ExpertRuntime
    from .runtime.bindings import load_bindings_file

    name = driver or ("scripted" if script else default_driver)
    options = {"script": script, "model": model, "base_url": base_url, "api_key_env": api_key_env}
    rt = ExpertRuntime(
        package,
        driver=name,
        driver_options=options,
        broker=broker or default_broker,
        workdir=workdir,
        listeners=tuple(listeners),
        **extra,
    )
    if bindings:
        try:
            rt.tools = load_bindings_file(bindings, BindContext(bindings.parent, rt))
        except BaseException:
            rt.stop()
            raise
    return rt


def _print_outcome(outcome, as_json: bool, command: str) -> None:
    if as_json:
        print_json(_envelope(command, outcome.ok, run=outcome.to_json()))
        return
    click.echo(f"{outcome.process} {outcome.run_id}: {outcome.status} after {outcome.attempts} attempt(s)")
    if outcome.error:
        click.echo(f"  error: {outcome.error}")
    if outcome.dry_run:
        for step in outcome.steps:
            click.echo(f"  [{'x' if step['completed'] else ' '}] {step['step']}. {step['text']}")
        for call in outcome.plan:
            state = "executed" if call["executed"] else f"not executed ({call.get('note')})"
            click.echo(f"  {call['operation']} [{call['tier']}] {json.dumps(call['arguments'])}: {state}")
    result = outcome.result or {}
    if result.get("narrative"):
        click.echo(result["narrative"])
    if result.get("structured") is not None:
        click.echo(json.dumps(result["structured"], indent=2, sort_keys=True))


@click.group(context_settings=CONTEXT_SETTINGS)
def group() -> None:
    """Run, explain, dry-run and export openexperts expert packages.

    \b
    Examples:
      agentpack experts explain my-expert --process inbound-email-triage
      agentpack experts dry-run my-expert inbound-email-triage --input message_id=m-1
      agentpack experts run my-expert --bindings bindings.yaml --driver openai --model gpt-4.1
      agentpack experts export my-expert --to skills out/skills
    """


@group.command()
@PACK
@click.option("--process", help="Only this process.")
@click.option("--op", "operation", metavar="TOOL.OP", help="Also explain this operation's approval tier.")
@click.option("--trigger", help="Only this trigger.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(pack: Path, process: str | None, operation: str | None, trigger: str | None, as_json: bool) -> None:
    """Print effective values (package defaults merged into processes and triggers) and where each came from.

    \b
    Examples:
      agentpack experts explain my-expert
      agentpack experts explain my-expert --process inbound-email-triage --op email.send --json
    """
    from .explain import explain as build
    from .explain import render_text

    data = build(_load(pack), process=process, operation=operation, trigger=trigger)
    if as_json:
        print_json(_envelope("explain", True, **data))
    else:
        click.echo(render_text(data), nl=False)


@group.command()
@PACK
@click.option("--process", help="Run this process once and exit (otherwise serve the triggers).")
@click.option("--input", "pairs", multiple=True, metavar="KEY=VALUE", help="A process input (string).")
@click.option("--inputs", "inputs_file", metavar="FILE|-", help="Process inputs as a JSON object.")
@click.option("--resume", is_flag=True, help="Finish runs a previous process left queued or running, then exit.")
@runtime_options
@click.option("--port", default=0, show_default=True, help="Port on 127.0.0.1 for webhooks/approvals (0: any).")
@click.option("--duration", type=float, help="Serve for this many seconds, then stop (default: until Ctrl-C).")
@click.option("--workers", default=4, show_default=True, help="Worker threads for the queue.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run(
    pack: Path,
    process: str | None,
    pairs: tuple[str, ...],
    inputs_file: str | None,
    resume: bool,
    port: int,
    duration: float | None,
    workers: int,
    as_json: bool,
    **options: Any,
) -> None:
    """Run a package: one process (--process), interrupted runs (--resume), or its triggers.

    Serving the triggers starts cron schedules and one HTTP server on 127.0.0.1 with
    POST /hooks/<trigger>, POST /channels/<channel> and POST /approvals/<id>. Every
    delivery, draft and escalation is printed as one JSON line on stdout.

    \b
    Examples:
      agentpack experts run my-expert --process triage --input message_id=m-1 --bindings b.yaml
      agentpack experts run my-expert --bindings b.yaml --driver openai --model gpt-4.1 --approve http
      agentpack experts run my-expert --resume --bindings b.yaml --script script.yaml
    """
    package = _load(pack)
    if process or resume:
        rt = _runtime(package, **options)
        try:
            if resume:
                outcomes = rt.resume_interrupted()
                ok = all(o.ok for o in outcomes)
                if as_json:
                    print_json(_envelope("run", ok, runs=[o.to_json() for o in outcomes]))
                else:
                    for outcome in outcomes:
                        _print_outcome(outcome, False, "run")
                    if not outcomes:
                        click.echo("nothing to resume")
            else:
                outcome = rt.run_process(process, _inputs(pairs, inputs_file))
                ok = outcome.ok
                _print_outcome(outcome, as_json, "run")
        finally:
            rt.stop()
        if not ok:
            raise SystemExit(EXIT_PROBLEMS)
        return
    lock = threading.Lock()

    def emit(message: dict[str, Any]) -> None:
        with lock:
            click.echo(json.dumps(message, sort_keys=True, default=str))

    rt = _runtime(package, listeners=(emit,), workers=workers, default_broker="http", **options)
    try:
        rt.start(http=True, port=port)
        click.echo(f"serving {package.name} on {rt.url}", err=True)
        for name, url in rt.webhook_urls().items():
            click.echo(f"  webhook {name}: POST {url}", err=True)
        for name, why in rt.inactive.items():
            click.echo(f"  trigger {name} inactive: {why}", err=True)
        end = time.monotonic() + duration if duration is not None else None
        while end is None or time.monotonic() < end:
            time.sleep(0.1 if end is None else max(0.0, min(0.1, end - time.monotonic())))
        rt.wait_idle(timeout=30)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        rt.stop()


@group.command(name="dry-run")
@PACK
@click.argument("process")
@click.option("--input", "pairs", multiple=True, metavar="KEY=VALUE", help="A process input (string).")
@click.option("--inputs", "inputs_file", metavar="FILE|-", help="Process inputs as a JSON object.")
@runtime_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dry_run(
    pack: Path, process: str, pairs: tuple[str, ...], inputs_file: str | None, as_json: bool, **options: Any
) -> None:
    """Plan a process: checklist steps, each operation with its effective tier; auto operations run,
    confirm and manual ones are only described. Uses a throwaway workdir unless --workdir is given.

    \b
    Examples:
      agentpack experts dry-run my-expert inbound-email-triage --input message_id=m-1
      agentpack experts dry-run my-expert triage --bindings b.yaml --script script.yaml --json
    """
    package = _load(pack)
    with tempfile.TemporaryDirectory(prefix="openexperts-dry-run-") as tmp:
        options["workdir"] = options.get("workdir") or Path(tmp)
        rt = _runtime(package, default_broker="reject", **options)
        try:
            outcome = rt.run_process(process, _inputs(pairs, inputs_file), dry_run=True)
        finally:
            rt.stop()
    _print_outcome(outcome, as_json, "dry-run")
    if not outcome.ok:
        raise SystemExit(EXIT_PROBLEMS)


@group.command()
@PACK
@click.option("--to", "kind", type=click.Choice(["skills"]), required=True, help="What to export to.")
@click.argument("target", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def export(pack: Path, kind: str, target: Path, as_json: bool) -> None:
    """Export one Agent Skill per function into TARGET (replaced as a whole; private knowledge is left out).

    \b
    Example:
      agentpack experts export my-expert --to skills out/skills
    """
    from .export import export_skills

    data = export_skills(_load(pack), target)
    ok = not any(f["severity"] == "error" for s in data["skills"] for f in s["findings"])
    if as_json:
        print_json(_envelope("export", ok, **data))
    else:
        for skill in data["skills"]:
            click.echo(
                f"{skill['skill']}: from {skill['source']}"
                + (f", {len(skill['references'])} reference(s)" if skill["references"] else "")
            )
        for item in data["omitted"]:
            click.echo(f"omitted {item['knowledge']} from {item['function']} ({item['reason']})")
    if not ok:
        raise SystemExit(EXIT_PROBLEMS)


def _store(pack: Path, workdir: Path | None, store: str | None = None):
    return open_store(pack, workdir, store, _load)


WORKDIR = click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), help="Runtime directory. Default: PACK/.openexperts"
)


@group.command()
@PACK
@WORKDIR
@STORE
@click.option("--status", help="Only runs with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs(pack: Path, workdir: Path | None, store: str | None, status: str | None, as_json: bool) -> None:
    """List runs recorded in the runtime directory.

    \b
    Example:
      agentpack experts runs my-expert --status dead_lettered
    """
    state = _store(pack, workdir, store)
    try:
        rows = [r for r in state.runs() if status is None or r["status"] == status]
    finally:
        state.close()
    if as_json:
        print_json(_envelope("runs", True, runs=rows))
        return
    for row in rows:
        click.echo(
            f"{row['run_id']}  {row['process']}  {row['status']}  attempts={row['attempt']}"
            + (f"  trigger={row['trigger']}" if row["trigger"] else "")
        )


@group.command()
@PACK
@click.argument("run_id")
@WORKDIR
@STORE
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def log(pack: Path, run_id: str, workdir: Path | None, store: str | None, as_json: bool) -> None:
    """Show a run's execution log: segments, completed steps, tool calls and events.

    \b
    Example:
      agentpack experts log my-expert run-18c2-0001 --json
    """
    state = _store(pack, workdir, store)
    try:
        run_row = state.run(run_id)
        if run_row is None:
            raise AgentpackError(f"no run '{run_id}'")
        data = {
            "run": run_row,
            "segments": state.segments(run_id),
            "steps": state.steps(run_id),
            "calls": state.calls(run_id),
            "events": state.events(run_id),
            "messages": state.messages(run_id),
        }
    finally:
        state.close()
    if as_json:
        print_json(_envelope("log", True, **data))
        return
    click.echo(f"{run_id} {run_row['process']} {run_row['status']} attempts={run_row['attempt']}")
    for seg in data["segments"]:
        click.echo(f"  segment {seg['segment']} attempt {seg['attempt']}: {seg['reason']}")
    for step in data["steps"]:
        click.echo(f"  step {step['step']} done (segment {step['segment']}) {step['summary'] or ''}".rstrip())
    for call in data["calls"]:
        click.echo(f"  call {call['seq']} {call['operation']} [{call['tier']}] {call['status']}")
    for event in data["events"]:
        click.echo(f"  event {event['kind']} {json.dumps(event['data'], sort_keys=True)}")


@group.group(name="dead-letters")
def dead_letters() -> None:
    """List and replay invocations that failed with on_failure: dead_letter."""


@dead_letters.command(name="list")
@PACK
@WORKDIR
@STORE
@click.option("--all", "include_replayed", is_flag=True, help="Include letters already replayed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dl_list(pack: Path, workdir: Path | None, store: str | None, include_replayed: bool, as_json: bool) -> None:
    """List dead letters.

    \b
    Example:
      agentpack experts dead-letters list my-expert --json
    """
    state = _store(pack, workdir, store)
    try:
        letters = state.dead_letters(include_replayed)
    finally:
        state.close()
    if as_json:
        print_json(_envelope("dead-letters list", True, dead_letters=letters))
        return
    for letter in letters:
        click.echo(
            f"{letter['id']}  {letter['process']}  attempts={letter['attempts']}  {letter['error']}"
            + (f"  (replayed as {letter['replayed_as']})" if letter["replayed_as"] else "")
        )
    if not letters:
        click.echo("no dead letters")


@dead_letters.command(name="replay")
@PACK
@click.argument("letter_id")
@runtime_options
@STORE
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def dl_replay(pack: Path, letter_id: str, store: str | None, as_json: bool, **options: Any) -> None:
    """Re-run a dead-lettered invocation with its original inputs (as a new run).

    With --store the new run is queued for the deployment's workers.

    \b
    Example:
      agentpack experts dead-letters replay my-expert dl-18c2-0003 --bindings b.yaml --script s.yaml
    """
    if store:
        rt = _runtime(_load(pack), store=store, workers=0, **options)
        try:
            queued = replay_queued(rt, letter_id)
        finally:
            rt.stop()
        if as_json:
            print_json(_envelope("dead-letters replay", True, **queued))
        else:
            click.echo(f"{letter_id}: queued as run {queued['run_id']}")
        return
    rt = _runtime(_load(pack), **options)
    try:
        outcome = rt.replay_dead_letter(letter_id)
    finally:
        rt.stop()
    _print_outcome(outcome, as_json, "dead-letters replay")
    if not outcome.ok:
        raise SystemExit(EXIT_PROBLEMS)


add_commands(group, runtime_options=runtime_options, make_runtime=_runtime, load=_load)
