"""``agentpack dci ...``: parse, lint, resolve, explain, record."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentpack.cli import clikit
from agentpack.cli.clikit import (
    EXIT_PROBLEMS,
    Recording,
    emit_json,
    emit_report,
    output_option,
    record_options,
    report_option,
)

if TYPE_CHECKING:
    from agentpack.io.clock import Clock

    from .model import Resolution
    from .probes import EmulationRequest

TEXT_OR_JSON = ("text", "json")


@clikit.group()
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
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace the files of an existing workspace.")
def init(directory: Path, force: bool) -> None:
    """Create a DCI workspace in DIRECTORY: a consumer skill whose strict contract requires a capability,
    and a provider skill that offers it.

    \b
    Example:
      agentpack dci init my-workspace
    """
    from .scaffold import scaffold

    consumer = scaffold(directory, force=force)
    click.echo(f"created {directory}")
    click.echo(f"next: agentpack dci lint {directory}")
    click.echo(f"      agentpack dci resolve -w {directory} --consumer {consumer} --no-history")


@group.command()
@click.argument("contract")
@output_option(choices=TEXT_OR_JSON, command="dci parse")
def parse(contract: str, output: str) -> None:
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
        if output == "json":
            emit_json("dci parse", False, error={"message": exc.message, "column": exc.column, "hint": exc.hint})
        else:
            click.echo(f"error: column {exc.column}: {exc.message}", err=True)
            click.echo(f"  {contract}\n  {' ' * (exc.column - 1)}^", err=True)
            if exc.hint:
                click.echo(f"  hint: {exc.hint}", err=True)
        raise SystemExit(EXIT_PROBLEMS) from None
    payload = contract_to_json(parsed)
    if output == "json":
        emit_json("dci parse", True, contract=payload)
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
@output_option(command="dci lint")
@report_option()
def lint(paths: tuple[Path, ...], strict: bool, output: str, report_file: Path | None) -> None:
    """Lint the metadata.contract of skill directories (or every skill of a workspace).

    \b
    Examples:
      agentpack dci lint skills/web-search skills/summarizer
      agentpack dci lint . -o sarif > dci.sarif
    """
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.kernel.models import Finding, Report, ValidationItem
    from agentpack.skills.skillmd import find_skill_md

    from .lint import lint_skill, lint_workspace, strictly

    items = []
    for path in paths:
        findings = lint_skill(path) if find_skill_md(path) else lint_workspace(path)
        if strict:
            findings = strictly(findings)
        items.append(ValidationItem(path=str(path), format="dci", findings=sorted(findings, key=Finding.sort_key)))
    report = Report(command="dci lint", generated_at=SYSTEM_CLOCK.now(), items=items)
    emit_report(report, output, report_file)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


# -- resolve / explain ---------------------------------------------------------------------------
def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def resolution_options(f: Any) -> Any:
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
        click.option("--query", help="Query text for S_desc and S_namepath (default: the capability ids)."),
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
        clikit.pairs_option("--policy", "policy", help_text="Runtime policy override (repeatable)."),
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
        clikit.mcp_option(),
        click.option("--no-history", is_flag=True, help="Do not read the reliability state (ephemeral)."),
        click.option("--all-candidates", is_flag=True, help="List every candidate, not only those with a signal."),
        click.option("--run-id", help="Run id for the report (default: random)."),
        click.option("--at", "at", metavar="TIMESTAMP", help="Fixed RFC 3339 time for the report (reproducible)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _clock(at: str | None) -> Clock:
    """``--at TIMESTAMP``: a fixed clock for reproducible output; else the system clock."""
    from agentpack.io.clock import SYSTEM_CLOCK, FixedClock

    try:
        return FixedClock(at) if at else SYSTEM_CLOCK
    except ValueError:
        raise click.BadParameter(f"'{at}' is not an RFC 3339 time", param_hint="--at") from None


def _consumer_contract(consumer: Path | None, contract_text: str | None) -> Any:
    """The consumer contract of ``--consumer SKILL`` or ``--contract TEXT`` (``None`` for neither)."""
    from agentpack.io.errors import AgentpackError
    from agentpack.skills.skillmd import read_skill

    from .grammar import ContractParseError, parse_contract

    if consumer is not None and contract_text is not None:
        raise click.UsageError("give --consumer or --contract, not both")
    where: dict[str, Any] = {"file": "--contract"}
    if consumer is not None:
        skill = read_skill(consumer)
        text = skill.metadata.get("contract")
        where = skill.where("/metadata/contract" if isinstance(text, str) else "/metadata")
        if not isinstance(text, str):
            raise AgentpackError(
                "the consumer skill has no metadata.contract string", file=where["file"], line=where["line"]
            )
    elif contract_text is not None:
        text = contract_text
    else:
        return None
    try:
        return parse_contract(text)
    except ContractParseError as exc:
        raise AgentpackError(
            f"consumer contract: {exc.message} (column {exc.column})",
            hint=exc.hint,
            file=where.get("file"),
            line=where.get("line"),
        ) from None


def _remote(servers: list[Any]) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """The candidates the ``--mcp`` servers list: origin-tagged location, last path segment, frontmatter.
    Only the listings are read: resolving needs no skill's files."""
    if not servers:
        return ()
    from agentpack.mcp.skillsource import open_sources

    with open_sources(servers) as sources:
        listed = [skill for source in sources for skill in source.skills()]
        for source in sources:
            for declined in source.declined:
                click.echo(f"warning: {declined.location}: not a candidate: {declined.reason}", err=True)
    return tuple((s.location, s.entry.path_segments[-1], s.entry.frontmatter) for s in listed)


def _resolve(a: dict[str, Any], as_json: bool) -> Resolution:
    from .resolve import Resolver, ResolveRequest

    policy = {key.strip(): value for key, value in a["policy"].items()}
    if a["selection"]:
        policy["selection-mode"] = a["selection"]
    if a["max_providers"]:
        policy["max-providers"] = str(a["max_providers"])
    consumer = _consumer_contract(a["consumer"], a["contract_text"])
    clock = _clock(a["at"])
    run_id = a["run_id"]
    resolver = Resolver(
        a["workspace"],
        host=clikit.host(),
        skills_roots=a["skills_roots"],
        aliases_file=a["aliases_file"],
        clock=clock,
        run_ids=(lambda: run_id) if run_id else None,
        ephemeral_history=a["no_history"],
        remote=_remote(a["mcp"]),
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


def _prompt(request: EmulationRequest) -> str:
    click.echo(
        f"required capabilities not resolved: {', '.join(request.unresolved) or '(no provider selected)'}", err=True
    )
    return click.prompt("choose", type=click.Choice(list(request.options)), default="abort", err=True)


@group.command()
@resolution_options
@report_option(
    "Also write a report by its suffix: .json the capability_resolution_report (the origin's schema), "
    ".html (candidates, score breakdown, tie-breaks, charts), .xml, .sarif, .txt."
)
@click.option(
    "--report-extensions",
    is_flag=True,
    help="Write a .json --report with agentpack's extension fields inside (valid against agentpack's schema only).",
)
@output_option(choices=TEXT_OR_JSON, command="dci resolve")
@record_options()
def resolve(
    report_file: Path | None, report_extensions: bool, output: str, recording: Recording, **options: Any
) -> None:
    """Select provider skills for the required capabilities; exit 1 when resolution fails or aborts.

    -o json prints the envelope with the capability_resolution_report as the
    origin's schema defines it (`report`) and agentpack's extension fields
    beside it (`extensions`: status, query, statistics, per candidate name,
    matches, flags, ranking...).

    \b
    Examples:
      agentpack dci resolve --require web-search,summarization --optional critical-thinking
      agentpack dci resolve --require web-search --mode strict --selection cover -o json
      agentpack dci resolve --consumer skills/research-brief --decision emulate
    """
    from agentpack.io import console

    from .report import build_report, render_text, split_report, writable

    console.info(  # without -v: one comparison, no logging import
        __name__,
        "dci resolve in %s: required %s, optional %s",
        options["workspace"],
        options["required"],
        options["optional"],
    )
    resolution = _resolve(options, output == "json")
    json_file = report_file is not None and report_file.suffix.lower() == ".json"
    page = report_file is not None and not json_file  # the run page as a file (.html, .md): every candidate
    # the report is streamed unless a page lists it whole: each candidate's entry is made as it is written, never
    # all held; a run recorded without a page keeps the best candidates only (runlog.recorded)
    full = build_report(resolution, stream=not page)
    console.info(
        __name__,
        "dci resolve: %s, %d candidate(s), selected %s",
        full.get("status"),
        len(full.get("candidates") or []),
        full.get("selected_candidates"),
    )
    run = None
    if page or recording.enabled:
        from .runlog import build, recorded

        run = build(full if page else recorded(full), resolution.ok, Path(options["workspace"]))
    if report_file is not None and json_file:
        from agentpack.io.envelope import write_chunks
        from agentpack.io.fsutil import SHARED, atomic_file

        value = writable(full) if report_extensions else split_report(full)[0]
        with atomic_file(report_file, mode=SHARED) as handle:  # the text of atomic_write_json, as it is made
            write_chunks(value, lambda chunk: handle.write(chunk.encode("utf-8")), sort_keys=True)
            handle.write(b"\n")
    elif report_file is not None and run is not None:
        from agentpack.cli.reportfile import write_run_report

        write_run_report(run, report_file)
    if output == "json":
        report, extensions = split_report(full)  # a streamed report's halves are written once: made here
        emit_json("dci resolve", resolution.ok, report=report, extensions=extensions)
    else:
        click.echo(render_text(full), nl=False)
    if run is not None:
        from agentpack.results.runs import save_run

        save_run(run, recording=recording)
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
@output_option(choices=TEXT_OR_JSON, command="dci explain")
def explain(from_report: Path | None, candidate: str | None, limit: int, output: str, **options: Any) -> None:
    """Show each score's breakdown, the gates a candidate failed and which tie-break decided.

    With -o json: the explained candidates' report entries and the run's statistics.

    --from-report takes what `dci resolve -o json` printed, or a report written
    with `--report FILE --report-extensions`.

    \b
    Examples:
      agentpack dci explain --require web-search --candidate web-search
      agentpack dci resolve --require web-search --json > run.json && agentpack dci explain --from-report run.json
    """
    from .report import build_report, explained, render_explain

    report = _saved_report(from_report) if from_report is not None else build_report(_resolve(options, False))
    if output == "json":
        emit_json(
            "dci explain",
            True,
            run_id=report["run_id"],
            statistics=report["statistics"],
            candidates=explained(report, candidate, limit),
        )
        return
    click.echo(render_explain(report, candidate, limit), nl=False)


def _saved_report(path: Path) -> dict[str, Any]:
    """The full report saved as ``resolve --json``'s envelope (report and extensions) or by
    ``resolve --report FILE --report-extensions``."""
    from agentpack.io import jsonio
    from agentpack.io.errors import AgentpackError

    from .report import EXTENSION_KEYS, join_report
    from .schemas_store import REPORT, store

    data = jsonio.load_file(path)
    report = data.get("report", data) if isinstance(data, dict) else None
    extensions = data.get("extensions") if isinstance(data, dict) and "report" in data else None
    if isinstance(report, dict) and isinstance(extensions, dict) and isinstance(report.get("candidates"), list):
        report = join_report(report, extensions)
    problems = store().validate(REPORT, report, file=str(path))
    if problems or not isinstance(report, dict):
        message = problems[0].message if problems else "not a JSON object"
        raise AgentpackError(f"not a capability_resolution_report: {message}", file=str(path))
    if any(key not in report for key in EXTENSION_KEYS if key != "history_note"):
        raise AgentpackError(
            "the report has only the origin's fields; explaining it needs agentpack's extensions",
            file=str(path),
            hint="save 'dci resolve --json' output, or write the report with --report-extensions",
        )
    return report


# -- record ----------------------------------------------------------------------------------
@group.command()
@click.argument("skill")
@click.option("--success/--failure", "success", required=True, help="The outcome of using SKILL.")
@click.option(
    "--workspace", "-w", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".", show_default=True
)
@click.option("--skills-root", "skills_roots", multiple=True, type=click.Path(path_type=Path))
@click.option("--at", "at", metavar="TIMESTAMP", help="Fixed RFC 3339 time (reproducible).")
@output_option(choices=TEXT_OR_JSON, command="dci record")
def record(
    skill: str, success: bool, workspace: Path, skills_roots: tuple[Path, ...], at: str | None, output: str
) -> None:
    """Record one outcome of SKILL (an id, a skill name or a directory) in the reliability history.

    \b
    Examples:
      agentpack dci record web-search --success
      agentpack dci record "web-search::skills/web-search" --failure --workspace .
    """
    from .resolve import Resolver

    resolver = Resolver(workspace, host=clikit.host(), skills_roots=skills_roots, clock=_clock(at))
    candidate = resolver.find(skill)
    entry = resolver.history.record(candidate, success)
    path = resolver.history.path
    if output == "json":
        emit_json("dci record", True, candidate=candidate, path=str(path), entry=entry)
        return
    click.echo(
        f"{candidate}: {'success' if success else 'failure'} recorded; success rate "
        f"{entry['success_rate_last_20']} over {entry['sample_size']} runs ({path})"
    )
