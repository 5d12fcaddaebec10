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
@output_option(choices=("text", "json"), command="runs list")
def list_(store: Path | None, limit: int, output: str, **kwargs: Any) -> None:
    """List recorded runs, newest first.

    \b
    Examples:
      agentpack runs list --status failed
      agentpack runs list --input examples/pack --since 2026-03-01 --json
    """
    found: list[Run] = []
    if _exists(store):
        with _open(store) as opened:
            found = opened.find(limit=limit, **_filters(kwargs, opened))
    if output == "json":
        emit_json("runs list", True, runs=[r.summary_json() for r in found])
        return
    if not found:
        click.echo("no runs recorded yet" if not _exists(store) else "no runs match")
        return
    for r in found:
        tags = f"  [{', '.join(r.tags)}]" if r.tags else ""
        dirty = "+" if r.git_dirty else ""
        commit = f"  {r.git_commit[:8]}{dirty}" if r.git_commit else ""
        click.echo(
            f"#{r.id:<5} {r.started_at[:19]}  {_status(r.status, 11)} {r.passed:>4}/{r.total:<4} "
            f"{r.command:<11} {r.input}{commit}{tags}"
        )


def _status(status: str, width: int = 0) -> str:
    """``status`` upper-cased and padded; coloured unless ``NO_COLOR`` (click drops colour off a terminal)."""
    text = status.upper().ljust(width)
    colour = {"passed": "green", "failed": "red", "error": "red", "interrupted": "yellow"}.get(status)
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
        emit_json("runs show", True, run=found.to_json())
        return
    click.echo(_render_show(found, markdown=output == "markdown"), nl=False)


def _render_show(run: Run, *, markdown: bool) -> str:
    rate = f"{run.pass_rate * 100:.1f}%"
    head = f"run #{run.id}: {run.command} {run.input}"
    lines = [f"### {head}", ""] if markdown else [head]
    facts = [
        ("status", run.status + (f" ({run.message})" if run.message else "")),
        ("format", run.format or ""),
        ("started", run.started_at),
        ("duration", f"{run.duration_s:.2f} s"),
        ("cases", f"{run.passed}/{run.total} passed ({rate}), {run.failed} failed, {run.errors} errors"),
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
            text = f"{case.status.upper():<7} {case.key}" + (f"  {case.message}" if case.message else "")
            lines.append(f"- `{text}`" if markdown else f"  {text}")
    return "\n".join(lines) + "\n"


@runs.command()
@click.argument("refs", nargs=-1, metavar="[RUN]...")
@store_option
@filter_options
@click.option("-n", "--limit", type=click.IntRange(min=1), help="At most N runs (newest).")
@click.option("-o", "--output", "exporter", metavar="NAME", help="Exporter: jsonl, csv, or a plugin's.")
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

    \b
    Examples:
      agentpack runs export > runs.jsonl
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


def _input_key(given: str, opened: RunStore) -> str:
    """``given`` as stored, or the key of the path ``given`` names (so ``./pack/`` finds ``pack``)."""
    if given in opened.distinct("input"):
        return given
    from agentpack.results.runs.provenance import input_key
    from agentpack.results.runs.store import project_root

    return input_key(given, project_root())
