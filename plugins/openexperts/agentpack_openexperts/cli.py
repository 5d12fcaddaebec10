"""``agentpack experts ...``: explain, run, dry-run, export, runs, log and dead letters.

Built on ``agentpack.cli.clikit`` (context settings, ``-o/--output`` with ``--json``, the
JSON envelope); what a command computes lives in ``commands.py``, shared with the MCP
tools. Imported only when ``agentpack experts`` runs; the runtime is imported inside
the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentpack.cli import clikit
from agentpack.cli.clikit import (
    EXIT_PROBLEMS,
    Recording,
    emit_json,
    output_option,
    pairs_option,
    print_json,
    record_options,
    report_option,
)
from agentpack.io.errors import AgentpackError

from .deploy import PORT, STORE, add_commands, duration_option, open_store, replay_queued, settle_queued
from .names import RUNTIME_DB, WORKDIR

if TYPE_CHECKING:
    from .model import ExpertPackage
    from .runtime import RunOutcome

F = TypeVar("F", bound=Callable[..., Any])
PACK = click.argument("pack", type=click.Path(exists=True, path_type=Path))
OUTPUT = output_option(choices=("text", "json"))
INPUT = pairs_option("--input", "pairs", help_text="A process input (string); repeatable.")
INPUTS = click.option("--inputs", "inputs_file", metavar="FILE|-", help="Process inputs as a JSON object.")
WORKDIR_OPTION = click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), help=f"Runtime directory. Default: PACK/{WORKDIR}"
)


def _load(pack: Path) -> ExpertPackage:
    from .commands import load

    return load(clikit.host(), pack)


def _inputs(pairs: dict[str, str], inputs_file: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if inputs_file:
        from agentpack.io import jsonio

        try:  # strict JSON: not a file, not UTF-8, deep or NaN is a usage error
            values = jsonio.loads(sys.stdin.buffer.read()) if inputs_file == "-" else jsonio.load_file(inputs_file)
        except jsonio.JsonError as exc:
            raise click.BadParameter(str(exc), param_hint="--inputs") from None
        if not isinstance(values, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--inputs")
    return {**values, **pairs}


def runtime_options(f: F) -> F:
    """Options shared by the commands that run a package."""
    options = [
        click.option(
            "--bindings",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Tool bindings YAML (python, skill or mcp per tool).",
        ),
        click.option("--driver", default=None, help="Agent driver: openai, scripted, plan, noop or a plugin's."),
        click.option("--script", type=click.Path(exists=True, dir_okay=False), help="Script for --driver scripted."),
        click.option("--model", help="Model for --driver openai (default: $AGENTPACK_OPENEXPERTS_MODEL)."),
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
            help=f"Runtime directory (state, scratch, {RUNTIME_DB}). Default: PACK/{WORKDIR}",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


SERVER_OPTIONS = ("host", "tls_cert", "tls_key", "allow_plaintext", "allowed_hosts", "token_file", "insecure_webhooks")
FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def server_options(f: F) -> F:
    """Options of the HTTP server that serves the triggers (their values reach ``ServerSettings``)."""
    options = [
        click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help="Address to listen on; any but loopback needs --tls-cert/--tls-key or --allow-plaintext.",
        ),
        click.option("--tls-cert", type=FILE, help="TLS certificate chain (PEM): serve HTTPS."),
        click.option("--tls-key", type=FILE, help="The TLS certificate's private key (PEM)."),
        click.option(
            "--allow-plaintext", is_flag=True, help="Plain HTTP on a non-loopback address (TLS proxy in front)."
        ),
        click.option(
            "--allow-host",
            "allowed_hosts",
            multiple=True,
            metavar="NAME",
            help="Another name clients send in Host (a proxy's, the certificate's); repeatable.",
        ),
        click.option(
            "--token-file",
            type=FILE,
            help="Bearer token for approvals. Default: $AGENTPACK_OPENEXPERTS_SERVER_TOKEN, else a new one.",
        ),
        click.option(
            "--insecure-webhooks",
            is_flag=True,
            help="Accept unsigned deliveries for triggers and channels without a secret (loopback only).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _print_outcome(outcome: RunOutcome, *, narrative: bool = True) -> None:
    if outcome.dry_run:
        _print_plan(outcome)
    else:
        click.echo(f"{outcome.process} {outcome.run_id}: {outcome.status} after {outcome.attempts} attempt(s)")
    if outcome.error:
        click.echo(f"  error: {outcome.error}")
    result = outcome.result or {}
    if narrative and result.get("narrative"):
        click.echo(result["narrative"])
    if result.get("structured") is not None:
        click.echo(json.dumps(result["structured"], indent=2, sort_keys=True))


def _print_plan(outcome: RunOutcome) -> None:
    """A dry run in plain words: the steps it would take, what ran, what did not and why."""
    from .runlog import WHAT_HAPPENS, not_executed_because

    ran = [c for c in outcome.plan if c["executed"]]
    click.echo(f"dry run of {outcome.process} ({outcome.run_id}): {outcome.status} after {outcome.attempts} attempt(s)")
    click.echo(f"steps ({len(outcome.steps)}):")
    for step in outcome.steps:
        click.echo(f"  {step['step']}. {step['text']}" + ("" if step["completed"] else "  (not reached)"))
    click.echo(f"operations: {len(ran)} executed, {len(outcome.plan) - len(ran)} not executed")
    for call in outcome.plan:
        state = "executed (auto)" if call["executed"] else f"not executed: {not_executed_because(call)}"
        if not call["executed"] and call["tier"] == "auto":  # confirm and manual reasons say what a real run does
            state += f"; a real run with a binding {WHAT_HAPPENS['auto']}"
        click.echo(f"  {call['operation']} [{call['tier']}] {json.dumps(call['arguments'])}: {state}")
    if len(ran) < len(outcome.plan):
        click.echo(
            f"the {len(outcome.plan) - len(ran)} operation(s) not executed were only described: no tool was called "
            "for them, nothing was sent or changed"
        )


def _report_outcome(outcome: RunOutcome, output: str, command: str, *, narrative: bool = True) -> None:
    """Print one run's outcome; exit 1 unless it succeeded."""
    from .commands import run_envelope

    if output == "json":
        print_json(run_envelope(command, outcome))
    else:
        _print_outcome(outcome, narrative=narrative)
    if not outcome.ok:
        raise SystemExit(EXIT_PROBLEMS)


@clikit.group()
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
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace the files of an existing package.")
def init(directory: Path, force: bool) -> None:
    """Create an expert package in DIRECTORY: expert.yaml, an orchestrator, a persona, one process, one
    function and one knowledge file (it validates strictly and dry-runs).

    \b
    Example:
      agentpack experts init support-expert
    """
    from .scaffold import scaffold

    for path in scaffold(directory, clikit.host().schemas(), force=force):
        click.echo(f"created {path}")
    click.echo(f"next: agentpack validate {directory} --strict")
    click.echo(f"      agentpack experts explain {directory}")
    click.echo(f"      agentpack experts dry-run {directory} answer-question --input question=hello --no-record")


@group.command()
@PACK
@click.option("--process", help="Only this process.")
@click.option("--op", "operation", metavar="TOOL.OP", help="Also explain this operation's approval tier.")
@click.option("--trigger", help="Only this trigger.")
@OUTPUT
def explain(pack: Path, process: str | None, operation: str | None, trigger: str | None, output: str) -> None:
    """Print effective values (package defaults merged into processes and triggers) and where each came from.

    \b
    Examples:
      agentpack experts explain my-expert
      agentpack experts explain my-expert --process inbound-email-triage --op email.send --json
    """
    from .commands import explain_envelope
    from .explain import render_text

    data = explain_envelope(_load(pack), process=process, operation=operation, trigger=trigger)
    if output == "json":
        print_json(data)
    else:
        click.echo(render_text(data), nl=False)


@group.command()
@PACK
@click.option("--process", help="Run this process once and exit (otherwise serve the triggers).")
@INPUT
@INPUTS
@click.option("--resume", is_flag=True, help="Finish runs a previous process left queued or running, then exit.")
@runtime_options
@PORT
@server_options
@duration_option("Ctrl-C")
@click.option(
    "--workers", default=4, show_default=True, type=click.IntRange(min=1), help="Worker threads for the queue."
)
@OUTPUT
def run(
    pack: Path,
    process: str | None,
    pairs: dict[str, str],
    inputs_file: str | None,
    resume: bool,
    port: int,
    duration: float | None,
    workers: int,
    output: str,
    **options: Any,
) -> None:
    """Run a package: one process (--process), interrupted runs (--resume), or its triggers.

    Serving the triggers starts cron schedules and one HTTP server (127.0.0.1 unless --host)
    with POST /hooks/<trigger>, POST /channels/<channel> and POST /approvals/<id>. Webhooks
    and channel messages must be signed with their secret (X-Hub-Signature-256; secrets in
    AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_<TRIGGER>); approvals need the bearer token printed
    at start. Every delivery, draft and escalation is printed as one JSON line on stdout.

    \b
    Examples:
      agentpack experts run my-expert --process triage --input message_id=m-1 --bindings b.yaml
      agentpack experts run my-expert --bindings b.yaml --driver openai --model gpt-4.1 --approve http
      agentpack experts run my-expert --resume --bindings b.yaml --script script.yaml
    """
    from .commands import make_runtime

    server = {name: options.pop(name) for name in SERVER_OPTIONS}
    package = _load(pack)
    host = clikit.host()
    if resume:
        rt = make_runtime(package, host, **options)
        try:
            outcomes = rt.resume_interrupted()
            resumed = {o.run_id for o in outcomes}
            held = [r["run_id"] for r in rt.store.runs(("held",)) if r["run_id"] not in resumed]
        finally:
            rt.stop()
        for run_id in held:  # not resumed: a person must settle a call first
            click.echo(f"note: run {run_id} is held; see 'experts log', then 'experts settle'", err=True)
        if output == "json":
            emit_json("experts run", all(o.ok for o in outcomes), runs=[o.to_json() for o in outcomes])
        else:
            for outcome in outcomes:
                _print_outcome(outcome)
            if not outcomes:
                click.echo("nothing to resume")
        if not all(o.ok for o in outcomes):
            raise SystemExit(EXIT_PROBLEMS)
        return
    if process:
        rt = make_runtime(package, host, **options)
        try:
            outcome = rt.run_process(process, _inputs(pairs, inputs_file))
        finally:
            rt.stop()
        _report_outcome(outcome, output, "run")
        return
    lock = threading.Lock()

    def emit(message: dict[str, Any]) -> None:
        with lock:
            click.echo(json.dumps(message, sort_keys=True, default=str))

    from .runtime.serverconfig import ServerSettings

    rt = make_runtime(package, host, listeners=(emit,), workers=workers, default_broker="http", **options)
    try:
        rt.start(http=True, server=ServerSettings(port=port, **server))
        _announce(rt)
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


def _announce(rt: Any) -> None:
    """Where the server listens, its token (a generated one is shown this once) and each webhook's secret."""
    from .runtime.webhooks import env_name, secret_for

    token = rt.server.token
    click.echo(f"serving {rt.package.name} on {rt.url}", err=True)
    if token.path is not None:
        click.echo(f"  approval token: {token.value} (saved in {token.path}, mode 0600)", err=True)
    else:
        click.echo(f"  approval token: from {token.source}", err=True)
    for name, url in rt.webhook_urls().items():
        if secret_for("webhook", name, rt.server.settings.webhook_secrets):
            how = "signed"
        elif rt.server.settings.insecure_webhooks:
            how = "unsigned accepted (--insecure-webhooks)"
        else:
            how = f"refused until {env_name('webhook', name)} is set"
        click.echo(f"  webhook {name}: POST {url} ({how})", err=True)


@group.command(name="dry-run")
@PACK
@click.argument("process")
@INPUT
@INPUTS
@runtime_options
@report_option(
    "Also write a report: .html (the plan, what ran and what did not, with approval tiers), .json, .xml, .txt."
)
@record_options()
@OUTPUT
def dry_run(
    pack: Path,
    process: str,
    pairs: dict[str, str],
    inputs_file: str | None,
    report_file: Path | None,
    recording: Recording,
    output: str,
    **options: Any,
) -> None:
    """Plan a process: checklist steps, each operation with its effective tier; auto operations run,
    confirm and manual ones are only described. Uses a throwaway workdir unless --workdir is given.
    The dry run is recorded (agentpack runs, agentpack view).

    \b
    Examples:
      agentpack experts dry-run my-expert inbound-email-triage --input message_id=m-1
      agentpack experts dry-run my-expert triage --bindings b.yaml --script script.yaml --json
      agentpack experts dry-run my-expert triage --bindings b.yaml --report plan.html
    """
    import logging

    from agentpack.io.clock import SYSTEM_CLOCK

    from .commands import dry_run as plan
    from .effective import tier

    log = logging.getLogger(__name__)
    package = _load(pack)
    inputs = _inputs(pairs, inputs_file)
    log.info("dry run of %s in %s with inputs %s", process, pack, sorted(inputs))
    started, clock = SYSTEM_CLOCK.now(), time.monotonic()
    outcome = plan(package, clikit.host(), process, inputs, **options)
    duration = time.monotonic() - clock
    log.info("dry run %s: %s, %d operations planned", outcome.run_id, outcome.status, len(outcome.plan))
    run = None
    if report_file is not None or recording.enabled:
        from .runlog import build

        tiers = {c["operation"]: tier(package, c["operation"]).source for c in outcome.plan}
        settings = {k: str(v) if isinstance(v, Path) else v for k, v in options.items() if v is not None}
        run = build(
            outcome.to_json(), package, {**settings, "inputs": inputs}, tiers, started_at=started, duration_s=duration
        )
    if run is not None and report_file is not None:
        from agentpack.cli.reportfile import write_run_report

        write_run_report(run, report_file)
    driver = options.get("driver") or ("scripted" if options.get("script") else "plan")
    try:
        _report_outcome(outcome, output, "dry-run", narrative=driver != "plan")  # the plan's narrative is the steps
    finally:
        if run is not None:
            from agentpack.results.runs import save_run

            save_run(run, recording=recording)


@group.command()
@PACK
@click.option("--to", "kind", type=click.Choice(["skills"]), required=True, help="What to export to.")
@click.argument("target", type=click.Path(file_okay=False, path_type=Path))
@OUTPUT
def export(pack: Path, kind: str, target: Path, output: str) -> None:
    """Export one Agent Skill per function into TARGET (replaced as a whole; private knowledge is left out).

    \b
    Example:
      agentpack experts export my-expert --to skills out/skills
    """
    from .export import export_skills

    data = export_skills(_load(pack), target)
    ok = not any(f["severity"] == "error" for s in data["skills"] for f in s["findings"])
    if output == "json":
        emit_json("experts export", ok, **data)
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


def _store(pack: Path, workdir: Path | None, store: str | None) -> Any:
    """The run state to read: the database at ``store``, else the workdir's run store."""
    return open_store(pack, workdir, store, _load)


@group.command()
@PACK
@WORKDIR_OPTION
@STORE
@click.option("--status", help="Only runs with this status.")
@OUTPUT
def runs(pack: Path, workdir: Path | None, store: str | None, status: str | None, output: str) -> None:
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
    if output == "json":
        emit_json("experts runs", True, runs=rows)
        return
    for row in rows:
        click.echo(
            f"{row['run_id']}  {row['process']}  {row['status']}  attempts={row['attempt']}"
            + (f"  trigger={row['trigger']}" if row["trigger"] else "")
        )


@group.command()
@PACK
@click.argument("run_id")
@WORKDIR_OPTION
@STORE
@OUTPUT
def log(pack: Path, run_id: str, workdir: Path | None, store: str | None, output: str) -> None:
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
        data: dict[str, Any] = {
            "run": run_row,
            "segments": state.segments(run_id),
            "steps": state.steps(run_id),
            "calls": state.calls(run_id),
            "events": state.events(run_id),
            "messages": state.messages(run_id),
        }
    finally:
        state.close()
    if output == "json":
        emit_json("experts log", True, **data)
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


@group.command()
@PACK
@click.argument("run_id")
@click.option(
    "--happened/--not-happened",
    required=True,
    help="Whether the call took effect (checked in the tool's own system).",
)
@click.option("--result", "result_json", help="With --happened: what the call returned, as JSON (default {}).")
@WORKDIR_OPTION
@STORE
@OUTPUT
def settle(
    pack: Path,
    run_id: str,
    happened: bool,
    result_json: str | None,
    workdir: Path | None,
    store: str | None,
    output: str,
) -> None:
    """Settle the tool calls a crash left unknown in a held run; --resume then finishes the run.

    A run is held when it was killed while a tool call ran and nothing could tell whether the call took
    effect (see 'experts log RUN_ID'). --happened: the agent gets --result as the call's answer and the
    call is not made again; --not-happened: the call is made again when the run resumes. With --store
    the run goes back to the deployment's queue.

    \b
    Example:
      agentpack experts settle my-expert run-18c2-0001 --happened --result '{"ok": true}'
      agentpack experts run my-expert --resume --bindings b.yaml
    """
    from agentpack.io import jsonio

    from .runtime.idempotency import settle as settle_calls

    result: Any = {}
    if result_json is not None:
        if not happened:
            raise click.UsageError("--result goes with --happened")
        try:
            result = jsonio.loads(result_json)
        except jsonio.JsonError as exc:
            raise click.BadParameter(exc.message, param_hint="--result") from None
    if store:
        from .commands import make_runtime

        rt = make_runtime(_load(pack), clikit.host(), store=store, workers=0, workdir=workdir)
        try:
            seqs = settle_queued(rt, run_id, happened, result)
        finally:
            rt.stop()
    else:
        state = _store(pack, workdir, None)
        try:
            seqs = settle_calls(state, run_id, happened, result, time.time())
        finally:
            state.close()
    if output == "json":
        emit_json("experts settle", True, run_id=run_id, calls=seqs, happened=happened)
        return
    what = "happened" if happened else "did not happen (it runs again)"
    then = "it is queued again" if store else "finish it with 'experts run --resume'"
    click.echo(f"{run_id}: call(s) {', '.join(map(str, seqs))} settled: {what}; {then}")


@group.group(name="dead-letters", context_settings=clikit.CONTEXT_SETTINGS)
def dead_letters() -> None:
    """List and replay invocations that failed with on_failure: dead_letter."""


@dead_letters.command(name="list")
@PACK
@WORKDIR_OPTION
@STORE
@click.option("--all", "include_replayed", is_flag=True, help="Include letters already replayed.")
@OUTPUT
def dl_list(pack: Path, workdir: Path | None, store: str | None, include_replayed: bool, output: str) -> None:
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
    if output == "json":
        emit_json("experts dead-letters list", True, dead_letters=letters)
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
@OUTPUT
def dl_replay(pack: Path, letter_id: str, store: str | None, output: str, **options: Any) -> None:
    """Re-run a dead-lettered invocation with its original inputs (as a new run).

    With --store the new run is queued for the deployment's workers.

    \b
    Example:
      agentpack experts dead-letters replay my-expert dl-18c2-0003 --bindings b.yaml --script s.yaml
    """
    from .commands import make_runtime

    if store:
        rt = make_runtime(_load(pack), clikit.host(), store=store, workers=0, **options)
        try:
            queued = replay_queued(rt, letter_id)
        finally:
            rt.stop()
        if output == "json":
            emit_json("experts dead-letters replay", True, **queued)
        else:
            click.echo(f"{letter_id}: queued as run {queued['run_id']}")
        return
    rt = make_runtime(_load(pack), clikit.host(), **options)
    try:
        outcome = rt.replay_dead_letter(letter_id)
    finally:
        rt.stop()
    _report_outcome(outcome, output, "dead-letters replay")


def _make_runtime(package: ExpertPackage, **options: Any) -> Any:
    from .commands import make_runtime

    return make_runtime(package, clikit.host(), **options)


add_commands(
    group,
    runtime_options=runtime_options,
    server_options=server_options,
    server_keys=SERVER_OPTIONS,
    make_runtime=_make_runtime,
    load=_load,
    announce=_announce,
)
