"""``agentpack dci ...``: parse, lint, resolve, explain, record."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentpack.cli import EXIT_PROBLEMS, emit_report, output_option, print_json
from agentpack.clikit import record_options

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
def group() -> None:
    """Dependent Capability Contracts: declare what a skill provides and needs, and resolve providers.

    \b
    Examples:
      agentpack dci parse "DCI/1^strict P(web-search) Pol(min-total-score=0.5)"
      agentpack dci lint skills/web-search
      agentpack dci resolve --workspace . --require web-search,summarization
      agentpack dci explain --workspace . --require web-search
      agentpack dci record web-search --success
    """


# -- parse -----------------------------------------------------------------------------------
@group.command()
@click.argument("contract")
@click.option("--json", "as_json", is_flag=True, help="Print the parsed contract as JSON.")
def parse(contract: str, as_json: bool) -> None:
    """Parse CONTRACT and print its canonical form (exit 1 on a grammar error).

    \b
    Examples:
      agentpack dci parse "DCI/1 Provides(web-search) O(critical-thinking)"
      agentpack dci parse "DCI/1 A(output-format=json\\,yaml)" --json
    """
    from .grammar import ContractParseError, contract_to_json, parse_contract

    try:
        parsed = parse_contract(contract)
    except ContractParseError as exc:
        if as_json:
            print_json(
                {
                    "schema_version": 1,
                    "command": "dci parse",
                    "ok": False,
                    "error": {"message": exc.message, "column": exc.column, "hint": exc.hint},
                }
            )
        else:
            click.echo(f"error: column {exc.column}: {exc.message}", err=True)
            click.echo(f"  {contract}\n  {' ' * (exc.column - 1)}^", err=True)
            if exc.hint:
                click.echo(f"  hint: {exc.hint}", err=True)
        raise SystemExit(EXIT_PROBLEMS)
    payload = contract_to_json(parsed)
    if as_json:
        print_json({"schema_version": 1, "command": "dci parse", "ok": True, "contract": payload})
        return
    click.echo(payload["canonical"])
    for clause, cap in parsed.invalid_tokens():
        click.echo(f"warning: {clause}({cap.value!r}) is not a valid capability token: it {cap.problem}", err=True)
    for _, message, column in parsed.notes:
        click.echo(f"note: column {column}: {message}", err=True)


# -- lint ------------------------------------------------------------------------------------
@group.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@output_option()
def lint(paths: tuple[Path, ...], strict: bool, output: str) -> None:
    """Lint the metadata.contract of skill directories (or every skill of a workspace).

    \b
    Examples:
      agentpack dci lint skills/web-search skills/summarizer
      agentpack dci lint . -o sarif > dci.sarif
    """
    from agentpack.clock import SYSTEM_CLOCK
    from agentpack.models import Finding, Report, ValidationItem
    from agentpack.skillmd import find_skill_md

    from .lint import lint_skill, lint_workspace

    items = []
    for path in paths:
        findings = lint_skill(path) if find_skill_md(path) else lint_workspace(path)
        if strict:
            findings = [
                Finding(**{**f.model_dump(), "severity": "error"}) if f.severity == "warning" else f for f in findings
            ]
        items.append(ValidationItem(path=str(path), format="dci", findings=sorted(findings, key=Finding.sort_key)))
    report = Report(command="dci lint", generated_at=SYSTEM_CLOCK.now(), items=items)
    emit_report(report, output)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


# -- resolve / explain ---------------------------------------------------------------------------
def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def resolution_options(f):
    options = [
        click.option(
            "--workspace",
            "-w",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            default=".",
            show_default=True,
            help="Workspace root (its skills/ and .dci/).",
        ),
        click.option(
            "--require",
            "-r",
            "required",
            multiple=True,
            metavar="CAP[,CAP]",
            help="Required capabilities (repeatable, comma-separated).",
        ),
        click.option("--optional", "optional", multiple=True, metavar="CAP[,CAP]", help="Optional capabilities."),
        click.option("--query", "-q", help="Query text for S_desc and S_namepath (default: the capability ids)."),
        click.option(
            "--consumer",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            help="A consumer skill: its metadata.contract gives R(...), O(...), mode and Pol(...).",
        ),
        click.option("--contract", "contract_text", help="A consumer contract given inline."),
        click.option("--runtime", default="cli", show_default=True, help="Host runtime identifier."),
        click.option(
            "--mode",
            type=click.Choice(["strict", "best-effort"]),
            help="Resolution mode (default: the consumer contract's, else best-effort).",
        ),
        click.option("--selection", type=click.Choice(["single", "cover"]), help="Override selection-mode."),
        click.option("--max-providers", type=click.IntRange(min=1), help="Override max-providers."),
        click.option("--policy", "policy", multiple=True, metavar="KEY=VALUE", help="Runtime policy override."),
        click.option(
            "--skills-root",
            "skills_roots",
            multiple=True,
            type=click.Path(path_type=Path),
            help="A mounted external skill root (repeatable).",
        ),
        click.option(
            "--aliases",
            "aliases_file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Runtime/user alias table (highest precedence).",
        ),
        click.option(
            "--decision",
            type=click.Choice(["emulate", "continue-with-partial", "abort"]),
            help="Answer offer-emulation without a prompt.",
        ),
        click.option(
            "--prompt/--no-prompt",
            "prompt",
            default=None,
            help="Ask on the terminal when offer-emulation pauses (default: when stdin is a TTY).",
        ),
        click.option("--no-history", is_flag=True, help="Do not read the reliability state (ephemeral)."),
        click.option("--all-candidates", is_flag=True, help="List every candidate, not only those with a signal."),
        click.option("--run-id", help="Run id for the report (default: random)."),
        click.option("--at", "at", metavar="TIMESTAMP", help="Fixed RFC 3339 time for the report (reproducible)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _resolve(ctx_args: dict, as_json: bool):
    from agentpack.clock import SYSTEM_CLOCK, FixedClock
    from agentpack.errors import AgentpackError
    from agentpack.skillmd import read_skill

    from .grammar import ContractParseError, parse_contract
    from .resolve import Resolver, ResolveRequest

    a = ctx_args
    consumer = None
    if a["consumer"] is not None and a["contract_text"] is not None:
        raise click.UsageError("give --consumer or --contract, not both")
    if a["consumer"] is not None:
        skill = read_skill(a["consumer"])
        text = skill.metadata.get("contract")
        if not isinstance(text, str):
            raise AgentpackError("the consumer skill has no metadata.contract string", **skill.where("/metadata"))
        where = skill.where("/metadata/contract")
    elif a["contract_text"] is not None:
        text, where = a["contract_text"], {"file": "--contract"}
    else:
        text = where = None
    if text is not None:
        try:
            consumer = parse_contract(text)
        except ContractParseError as exc:
            raise AgentpackError(
                f"consumer contract: {exc.message} (column {exc.column})",
                hint=exc.hint,
                file=where.get("file"),
                line=where.get("line"),
            ) from None
    policy = {}
    for pair in a["policy"]:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"'{pair}' is not KEY=VALUE", param_hint="--policy")
        policy[key.strip()] = value
    if a["selection"]:
        policy["selection-mode"] = a["selection"]
    if a["max_providers"]:
        policy["max-providers"] = str(a["max_providers"])
    try:
        clock = FixedClock(a["at"]) if a["at"] else SYSTEM_CLOCK
    except ValueError:
        raise click.BadParameter(f"'{a['at']}' is not an RFC 3339 time", param_hint="--at") from None
    run_ids = (lambda: a["run_id"]) if a["run_id"] else None
    resolver = Resolver(
        a["workspace"],
        skills_roots=a["skills_roots"],
        aliases_file=a["aliases_file"],
        clock=clock,
        run_ids=run_ids,
        ephemeral_history=a["no_history"],
    )
    request = ResolveRequest(
        required=_split(a["required"]),
        optional=_split(a["optional"]),
        query=a["query"],
        mode=a["mode"],
        runtime=a["runtime"],
        consumer=consumer,
        policy=policy,
        decision=a["decision"],
        listing="all" if a["all_candidates"] else "relevant",
    )
    interactive = a["prompt"] if a["prompt"] is not None else (sys.stdin.isatty() and not as_json)
    return resolver.resolve(request, decide=_prompt if interactive else None)


def _prompt(request) -> str:
    click.echo(
        f"required capabilities not resolved: {', '.join(request.unresolved) or '(no provider selected)'}", err=True
    )
    return click.prompt("choose", type=click.Choice(list(request.options)), default="abort", err=True)


def _write_report(path: Path | None, report: dict) -> None:
    if path is not None:
        from agentpack.fsutil import atomic_write_json

        atomic_write_json(path, report)


@group.command()
@resolution_options
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the JSON report to this file.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Alias for -o json.")
@record_options()
def resolve(report_file: Path | None, output: str, as_json: bool, recording, **options) -> None:
    """Select provider skills for the required capabilities; exit 1 when resolution fails or aborts.

    \b
    Examples:
      agentpack dci resolve --require web-search,summarization --optional critical-thinking
      agentpack dci resolve --require web-search --mode strict --selection cover -o json
      agentpack dci resolve --consumer skills/research-brief --decision emulate
    """
    from .report import render_text

    as_json = as_json or output == "json"
    resolution = _resolve(options, as_json)
    report = resolution.report()
    _write_report(report_file, report)
    if as_json:
        print_json({"schema_version": 1, "command": "dci resolve", "ok": resolution.ok, "report": report})
    else:
        click.echo(render_text(report), nl=False)
    from .runlog import record

    record(report, resolution.ok, Path(options["workspace"]), recording)
    if not resolution.ok:
        raise SystemExit(EXIT_PROBLEMS)


@group.command()
@resolution_options
@click.option(
    "--from-report",
    "from_report",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Explain a saved JSON report instead of resolving again.",
)
@click.option("--candidate", "-c", help="Only this candidate (id or skill name).")
@click.option("--limit", default=5, show_default=True, type=click.IntRange(min=1), help="Candidates to explain.")
def explain(from_report: Path | None, candidate: str | None, limit: int, **options) -> None:
    """Show each score's breakdown, the gates a candidate failed and which tie-break decided.

    \b
    Examples:
      agentpack dci explain --require web-search --candidate web-search
      agentpack dci resolve --require web-search --report run.json && agentpack dci explain --from-report run.json
    """
    from agentpack.errors import AgentpackError

    from .report import render_explain

    if from_report is not None:
        try:
            data = json.loads(from_report.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AgentpackError(f"cannot read the report: {exc}", file=str(from_report)) from None
        report = data.get("report", data) if isinstance(data, dict) else None
        from . import schemas_store

        problems = schemas_store.store().validate(schemas_store.REPORT, report, file=str(from_report))
        if problems:
            raise AgentpackError(f"not a capability_resolution_report: {problems[0].message}", file=str(from_report))
    else:
        report = _resolve(options, False).report()
    click.echo(render_explain(report, candidate, limit), nl=False)


# -- record ----------------------------------------------------------------------------------
@group.command()
@click.argument("skill")
@click.option("--success/--failure", "success", required=True, help="The outcome of using SKILL.")
@click.option(
    "--workspace", "-w", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".", show_default=True
)
@click.option("--skills-root", "skills_roots", multiple=True, type=click.Path(path_type=Path))
@click.option("--at", "at", metavar="TIMESTAMP", help="Fixed RFC 3339 time (reproducible).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def record(
    skill: str, success: bool, workspace: Path, skills_roots: tuple[Path, ...], at: str | None, as_json: bool
) -> None:
    """Record one outcome of SKILL (an id, a skill name or a directory) in the reliability history.

    \b
    Examples:
      agentpack dci record web-search --success
      agentpack dci record "web-search::skills/web-search" --failure --workspace .
    """
    from agentpack.clock import SYSTEM_CLOCK, FixedClock

    from .resolve import Resolver

    try:
        clock = FixedClock(at) if at else SYSTEM_CLOCK
    except ValueError:
        raise click.BadParameter(f"'{at}' is not an RFC 3339 time", param_hint="--at") from None
    resolver = Resolver(workspace, skills_roots=skills_roots, clock=clock)
    candidate = resolver.find(skill)
    entry = resolver.history.record(candidate, success)
    path = resolver.history.path
    if as_json:
        print_json(
            {
                "schema_version": 1,
                "command": "dci record",
                "ok": True,
                "candidate": candidate,
                "path": str(path),
                "entry": entry,
            }
        )
        return
    click.echo(
        f"{candidate}: {'success' if success else 'failure'} recorded; success rate "
        f"{entry['success_rate_last_20']} over {entry['sample_size']} runs ({path})"
    )
