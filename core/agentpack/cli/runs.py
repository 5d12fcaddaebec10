"""``agentpack runs``: list, show, export, compare and trend the recorded runs.

Light at import (click and clikit only): the store loads when a command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentpack.cli.clikit import EXIT_PROBLEMS, emit_json, group, output_option, pairs_option

if TYPE_CHECKING:
    from agentpack.kernel.runtypes import Run
    from agentpack.results.runs.store import RunStore

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = ("text", "json", "markdown")


def store_option(f: F) -> F:
    """``--store FILE``: the run store to read (default: ``$AGENTPACK_RUNS`` or ``.agentpack/runs.sqlite``)."""
    return click.option(
        "--store",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The run store (default: $AGENTPACK_RUNS or .agentpack/runs.sqlite in the project).",
    )(f)


def filter_options(f: F) -> F:
    """The run filters of ``list`` and ``export``."""
    for decorator in reversed(
        [
            click.option("--format", "format_name", help="Only runs of this pack format."),
            click.option("--command", "command_name", help="Only runs of this command (e.g. 'eval', 'rpc run')."),
            click.option("--input", "input_key", help="Only runs of this input (as listed)."),
            click.option(
                "--status",
                type=click.Choice(["passed", "failed", "error", "interrupted"]),
                help="Only runs with this status.",
            ),
            click.option("--tag", help="Only runs with this tag."),
            click.option("--since", metavar="DATE", help="Only runs started on or after DATE (YYYY-MM-DD or ISO)."),
            click.option("--until", metavar="DATE", help="Only runs started on or before DATE."),
            click.option(
                "-s",
                "--search",
                metavar="TEXT",
                help="Free text: each word in the run's name, input, command, format, message or a tag (or #ID).",
            ),
        ]
    ):
        f = decorator(f)
    return f


def _open(store: Path | None) -> RunStore:
    from agentpack.results.runs.store import open_store

    return open_store(store, create=False)


def _exists(store: Path | None) -> bool:
    from agentpack.results.runs.store import default_store_path

    return (store or default_store_path()).is_file()


def _filters(kwargs: dict[str, Any], opened: RunStore) -> dict[str, Any]:
    return {
        "format": kwargs["format_name"],
        "command": kwargs["command_name"],
        "input": _input_key(kwargs["input_key"], opened) if kwargs["input_key"] else None,
        "status": kwargs["status"],
        "tag": kwargs["tag"],
        "since": kwargs["since"],
        "until": kwargs["until"],
        "search": kwargs["search"],
    }


@group()
def runs() -> None:
    """The run store: every eval, rpc run, skill test, ECP eval and DCI resolve recorded.

    \b
    Examples:
      agentpack runs list
      agentpack runs compare            # the last two runs of the latest input
      agentpack runs trend examples/pack
      agentpack view                    # browse them
    """


@runs.command(name="list")
@store_option
@filter_options
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(min=1), help="At most N runs.")
@click.option("--page", default=1, show_default=True, type=click.IntRange(min=1), help="Page N of --limit runs each.")
@output_option(choices=("text", "json"), command="runs list")
def list_(store: Path | None, limit: int, page: int, output: str, **kwargs: Any) -> None:
    """List recorded runs, newest first: id, start, verdict, cases, name, command and input.

    \b
    Examples:
      agentpack runs list --status failed
      agentpack runs list --search support --page 2
      agentpack runs list --input examples/pack --since 2026-03-01 --json
    """
    from agentpack.results import status

    found: list[Run] = []
    total = 0
    if _exists(store):
        with _open(store) as opened:
            filters = _filters(kwargs, opened)
            found = opened.find(limit=limit, offset=(page - 1) * limit, **filters)
            total = opened.count_found(**filters)
    if output == "json":
        runs = [{**r.summary_json(), **status.of_run(r)} for r in found]
        emit_json("runs list", True, runs=runs, total=total, page=page, limit=limit)
        return
    if not found:
        click.echo("no runs recorded yet" if not _exists(store) else "no runs match")
        return
    for r in found:
        said = status.of_run(r)
        tags = f"  [{', '.join(r.tags)}]" if r.tags else ""
        dirty = "+" if r.git_dirty else ""
        commit = f"  {r.git_commit[:8]}{dirty}" if r.git_commit else ""
        name = f"{r.name}  " if r.name else ""
        click.echo(
            f"#{r.id:<5} {r.started_at[:19]}  {_status(said['verdict'], 11)} {said['counts']:<24} "
            f"{name}{r.command} {r.input}{commit}{tags}"
        )
    if total > page * limit or page > 1:
        click.echo(f"runs {(page - 1) * limit + 1}-{(page - 1) * limit + len(found)} of {total}", err=True)


def _status(verdict: str, width: int = 0) -> str:
    """A verdict upper-cased and padded; coloured unless ``NO_COLOR`` (click drops colour off a terminal)."""
    from agentpack.results.status import TONE

    text = verdict.upper().ljust(width)
    colour = {"pass": "green", "fail": "red", "error": "red", "warn": "yellow"}.get(TONE.get(verdict, ""))
    return click.style(text, fg=colour) if colour and "NO_COLOR" not in os.environ else text


@runs.command()
@click.argument("run", default="latest")
@store_option
@output_option(choices=FORMATS, command="runs show")
def show(run: str, store: Path | None, output: str) -> None:
    """Show one run (default: the latest): summary, failures first. --json prints it all.

    \b
    Examples:
      agentpack runs show 12
      agentpack runs show latest --json
    """
    with _open(store) as opened:
        found = opened.get(opened.resolve(run))
    if output == "json":
        from agentpack.results.status import of_run

        emit_json("runs show", True, run={**found.to_json(), **of_run(found)})
        return
    click.echo(_render_show(found, markdown=output == "markdown"), nl=False)


def _render_show(run: Run, *, markdown: bool) -> str:
    from agentpack.results.status import case_label, of_run

    said = of_run(run)
    head = f"run #{run.id}: " + " ".join(filter(None, [run.name and f"{run.name} ·", run.command, run.input]))
    lines = [f"### {head}", "", f"**{said['headline']}**", ""] if markdown else [head, f"  {said['headline']}"]
    facts = [
        ("status", said["verdict"] + (f" ({run.message})" if run.message else "")),
        ("format", run.format or ""),
        ("started", run.started_at),
        ("duration", f"{run.duration_s:.2f} s"),
        ("cases", said["counts"] + (f" ({said['rate']})" if said["rate"] else "")),
        ("tokens", "" if run.total_tokens is None else f"{run.total_tokens:,}"),
        ("git", f"{run.git_commit or ''}{' (dirty)' if run.git_dirty else ''} {run.git_branch or ''}".strip()),
        ("agent", (run.agent or {}).get("name") or ""),
        ("digest", run.input_digest or ""),
        ("tags", ", ".join(run.tags)),
    ]
    for name, value in facts:
        if value:
            lines.append(f"- **{name}**: {value}" if markdown else f"  {name:<9} {value}")
    ordered = sorted(run.cases, key=lambda c: (not c.failing, c.status == "passed", c.key))
    if ordered:
        lines.append("" if markdown else "cases (failures first):")
        for case in ordered:
            text = f"{case_label(case.status).upper():<7} {case.key}" + (f"  {case.message}" if case.message else "")
            lines.append(f"- `{text}`" if markdown else f"  {text}")
    return "\n".join(lines) + "\n"


@runs.command()
@click.argument("refs", nargs=-1, metavar="[RUN]...")
@store_option
@filter_options
@click.option("-n", "--limit", type=click.IntRange(min=1), help="At most N runs (newest).")
@click.option("-o", "--output", "exporter", metavar="NAME", help="Exporter: jsonl, csv, html, or a plugin's.")
@click.option("--to", "target", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE, not stdout.")
@pairs_option(help_text="Exporter options (KEY=VALUE, repeatable), e.g. rows=cases for csv.")
def export(
    refs: tuple[str, ...],
    store: Path | None,
    limit: int | None,
    exporter: str | None,
    target: Path | None,
    options: dict[str, str],
    **kwargs: Any,
) -> None:
    """Export runs (the given ones, or all that match the filters, oldest first).

    The exporter is -o NAME, else the one whose suffix matches --to, else jsonl.
    -o html writes one run's page as agentpack view shows it, a file of its own.

    \b
    Examples:
      agentpack runs export > runs.jsonl
      agentpack runs export 12 -o html --to run-12.html
      agentpack runs export --to runs.csv --option rows=cases
      agentpack runs export 12 13 -o jsonl --option report=false
    """
    from agentpack.cli.clikit import host
    from agentpack.io.errors import AgentpackError

    exporters = host().run_exporters()
    if exporter is None and target is not None:
        exporter = next((e.name for e in exporters.values() if e.suffix and e.suffix == target.suffix.lower()), None)
    exporter = exporter or "jsonl"
    if exporter not in exporters:
        raise AgentpackError(f"unknown exporter '{exporter}'; choose from: {', '.join(sorted(exporters))}")
    with _open(store) as opened:
        if refs:
            ids = [opened.resolve(ref) for ref in refs]
        else:
            ids = [r.id for r in opened.find(limit=limit, **_filters(kwargs, opened))][::-1]
        selected = (opened.get(run_id) for run_id in ids)
        if target is None:
            exporters[exporter].export(selected, sys.stdout, options)
            sys.stdout.flush()
            return
        import io

        from agentpack.io.fsutil import atomic_write_text

        buffer = io.StringIO()
        exporters[exporter].export(selected, buffer, options)
        atomic_write_text(target, buffer.getvalue())
    click.echo(f"exported {len(ids)} runs to {target}", err=True)


@runs.command()
@click.argument("base", required=False, metavar="[A]")
@click.argument("head", required=False, metavar="[B]")
@click.option("--input", "input_key", help="Compare the last two runs of this input.")
@store_option
@output_option(choices=FORMATS, command="runs compare")
def compare(base: str | None, head: str | None, input_key: str | None, store: Path | None, output: str) -> None:
    """Compare run A with run B: regressions, fixes, new and removed cases, time and token deltas.

    Without runs: the latest run and the run before it of the same input. With
    A only: A and the run before it of the same input. Exit 1 on any regression
    (a case that passed in A and fails in B, or a run that errored): a CI gate.

    \b
    Examples:
      agentpack runs compare
      agentpack runs compare 12 14 -o markdown >> "$GITHUB_STEP_SUMMARY"
      agentpack runs compare --input examples/pack --json
    """
    from agentpack.results.runs import compare as comparing
    from agentpack.results.runs.store import StoreError

    with _open(store) as opened:
        if base and head:
            older, newer = opened.get(opened.resolve(base)), opened.get(opened.resolve(head))
        else:
            if base:
                newer = opened.get(opened.resolve(base))
            else:
                latest = opened.find(input=_input_key(input_key, opened) if input_key else None, limit=1)
                if not latest:
                    raise StoreError(f"no runs of '{input_key}' recorded" if input_key else "no runs recorded")
                newer = opened.get(latest[0].id)
            before = opened.previous(newer)
            if before is None:
                raise StoreError(
                    f"run #{newer.id} is the first run of '{newer.input}': nothing to compare with",
                    hint="run it again, or name two runs: agentpack runs compare A B",
                )
            older = opened.get(before.id)
    result = comparing.compare(older, newer)
    from agentpack.io import console

    console.logger(__name__).info(
        "compare #%d (base) with #%d (head): %d regressed, %d fixed",
        older.id,
        newer.id,
        result["counts"]["regressed"],
        result["counts"]["fixed"],
    )
    if output == "json":
        emit_json("runs compare", result["ok"], **{k: v for k, v in result.items() if k != "ok"})
    elif output == "markdown":
        click.echo(comparing.render_markdown(result), nl=False)
    else:
        click.echo(comparing.render_text(result), nl=False)
    if not result["ok"]:
        raise SystemExit(EXIT_PROBLEMS)


@runs.command()
@click.argument("input_key", required=False, metavar="[INPUT]")
@click.option("--command", "command_name", help="Only runs of this command.")
@click.option("--last", default=20, show_default=True, type=click.IntRange(min=2), help="The last N runs.")
@click.option(
    "--threshold",
    default=0.01,
    show_default=True,
    type=click.FloatRange(min=0),
    help="A pass-rate slope below -THRESHOLD per run is a regression (0.01: one point per run).",
)
@click.option("--min-runs", default=3, show_default=True, type=click.IntRange(min=2), help="Runs needed to judge.")
@store_option
@output_option(choices=FORMATS, command="runs trend")
def trend(
    input_key: str | None,
    command_name: str | None,
    last: int,
    threshold: float,
    min_runs: int,
    store: Path | None,
    output: str,
) -> None:
    """The pass rate of INPUT over its runs (default: the latest run's input) and its flaky cases.

    Exit 1 when the pass rate falls: the least-squares slope over the last
    runs is below -THRESHOLD (with at least --min-runs runs).

    \b
    Examples:
      agentpack runs trend examples/pack
      agentpack runs trend examples/pack --last 10 -o markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from agentpack.results.runs import trend as trending
    from agentpack.results.runs.store import StoreError

    with _open(store) as opened:
        if input_key is None:
            latest = opened.find(command=command_name, limit=1)
            if not latest:
                raise StoreError("no runs recorded")
            input_key = latest[0].input
        history = opened.history(_input_key(input_key, opened), command=command_name, last=last)
    if not history:
        raise StoreError(f"no runs of '{input_key}' recorded", hint="agentpack runs list shows the inputs")
    result = trending.trend(history, threshold=threshold, min_runs=min_runs)
    from agentpack.io import console

    console.logger(__name__).info("trend of %s over %d runs: slope %s", input_key, len(history), result["slope"])
    if output == "json":
        emit_json("runs trend", result["ok"], **{k: v for k, v in result.items() if k != "ok"})
    elif output == "markdown":
        click.echo(trending.render_markdown(result), nl=False)
    else:
        click.echo(trending.render_text(result), nl=False)
    if not result["ok"]:
        raise SystemExit(EXIT_PROBLEMS)


@runs.command()
@click.argument("refs", nargs=-1, required=True, metavar="RUN...")
@store_option
@click.option("--dry-run", is_flag=True, help="List the runs that would be deleted; delete nothing.")
@output_option(choices=("text", "json"), command="runs delete")
def delete(refs: tuple[str, ...], store: Path | None, dry_run: bool, output: str) -> None:
    """Delete runs (by id, #id, latest~N or uid prefix) with their cases and tags.

    \b
    Examples:
      agentpack runs delete 12 13
      agentpack runs delete latest --dry-run
    """
    with _open(store) as opened:
        ids = sorted({opened.resolve(ref) for ref in refs}, reverse=True)
        doomed = [opened.get(run_id, report=False) for run_id in ids]
        if not dry_run:
            opened.delete_many(ids)
    _deleted("runs delete", doomed, dry_run, output)


@runs.command()
@store_option
@click.option("--keep", type=click.IntRange(min=0), metavar="N", help="Keep the newest N runs of each input.")
@click.option(
    "--older-than",
    metavar="AGE",
    help="Delete runs started before AGE ago (30d, 12h, 2w) or before a date (2026-03-01).",
)
@click.option("--dry-run", is_flag=True, help="List the runs that would be deleted; delete nothing.")
@output_option(choices=("text", "json"), command="runs prune")
def prune(store: Path | None, keep: int | None, older_than: str | None, dry_run: bool, output: str) -> None:
    """Delete old runs: all but the newest --keep N of each input, and/or those older than --older-than.

    \b
    Examples:
      agentpack runs prune --keep 20
      agentpack runs prune --older-than 30d --dry-run
    """
    from agentpack.io.errors import AgentpackError

    if keep is None and older_than is None:
        raise AgentpackError(
            "say what to prune: --keep N and/or --older-than AGE", hint="agentpack runs prune --keep 20"
        )
    cutoff = _cutoff(older_than) if older_than else None
    with _open(store) as opened:
        doomed = opened.prunable(keep=keep, older_than=cutoff)
        if not dry_run:
            opened.delete_many([r.id for r in doomed])
    _deleted("runs prune", doomed, dry_run, output)


def _cutoff(age: str) -> str:
    """``AGE`` (``30d``, ``12h``, ``2w``, ``90m``) as the ISO time that long ago, or a date/time as given."""
    import re
    from datetime import UTC, datetime, timedelta

    from agentpack.io.errors import AgentpackError

    match = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", age)
    if match:
        unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
        when = datetime.now(UTC) - timedelta(**{unit: int(match.group(1))})
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        datetime.fromisoformat(age.replace("Z", "+00:00"))
    except ValueError:
        raise AgentpackError(
            f"--older-than: '{age}' is neither an age nor a date",
            hint="an age is a number and a unit (30d, 12h, 2w, 90m); a date is YYYY-MM-DD",
        ) from None
    return age


def _deleted(command: str, doomed: list[Run], dry_run: bool, output: str) -> None:
    if output == "json":
        emit_json(command, True, dry_run=dry_run, deleted=[r.summary_json() for r in doomed])
        return
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"{verb} {len(doomed)} run{'s' if len(doomed) != 1 else ''}")
    for r in doomed:
        click.echo(f"  #{r.id:<5} {r.started_at[:19]}  {r.status:<11} {r.command} {r.input}")


def _input_key(given: str, opened: RunStore) -> str:
    """``given`` as stored, or the key of the path ``given`` names (so ``./pack/`` finds ``pack``)."""
    if given in opened.distinct("input"):
        return given
    from agentpack.results.runs.provenance import input_key
    from agentpack.results.runs.store import project_root

    return input_key(given, project_root())
