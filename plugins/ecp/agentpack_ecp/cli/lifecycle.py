"""``agentpack ecp refresh``, ``publish``, ``rollback``, ``status``, ``prune`` and ``watch``: keeping a
pack current.

Implementations are imported when a command runs (``agentpack ecp --help`` imports none of them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from agentpack.cli.clikit import EXIT_PROBLEMS, EXIT_USAGE, Recording, envelope, output_option, record_options

from .output import PACK, emit


def _refresh_text(r: dict[str, Any]) -> str:
    plan = r.get("plan") or {}
    lines = [f"strategy: {r.get('strategy')} ({'; '.join(plan.get('reasons') or [])})"]
    for change in r.get("changes") or []:
        files = change["added"] + change["modified"] + change["deleted"]
        lines.append(
            f"  {change['source_id']} ({change['method']}): {len(change['added'])} added, "
            f"{len(change['modified'])} modified, {len(change['deleted'])} deleted, "
            f"{change['changed_lines']} lines" + (": " + ", ".join(files[:10]) if files else "")
        )
    if r.get("evals"):
        e = r["evals"]
        lines.append(
            f"evals: {e['total'] - e['failed'] - e['errors']}/{e['total']} passed"
            + (
                ""
                if e["passed"]
                else " (FAILED: " + ", ".join(f"{s['suite_id']}/{c}" for s in e["suites"] for c in s["failed"]) + ")"
            )
        )
    lines.append(f"decision: {r['decision']}" + (f" (run {r['run_id']})" if r.get("run_id") else ""))
    lines += [f"note: {m}" for m in r.get("messages") or []]
    return "\n".join(lines)


@click.command()
@click.argument("pack", type=PACK)
@click.option("--dry-run", is_flag=True, help="Report the strategy and the changed files; write nothing.")
@click.option("--rebuild", is_flag=True, help="Rebuild every index from scratch.")
@click.option("--no-evals", is_flag=True, help="Skip the eval gate (the build is published as if it passed).")
@click.option(
    "--wait",
    "lock_timeout",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds to wait for another refresh of the pack to finish.",
)
@output_option(choices=("text", "json"), command="ecp refresh")
@record_options()
def refresh(
    pack: Path, dry_run: bool, rebuild: bool, no_evals: bool, lock_timeout: float, output: str, recording: Recording
) -> None:
    """Refresh PACK's indexes from its sources, gated by its evals and maintenance policy.

    Builds only what changed (git diff for git sources, a file-manifest diff
    otherwise) into a staging area, runs validation.eval_suites on the staged
    build and publishes it by an atomic swap (or waits for 'ecp publish').
    Exit status 1 when the evals fail, the build is rolled back or blocked, or
    a budget refuses the update. The eval gate is recorded (agentpack runs).

    \b
    Examples:
      agentpack ecp refresh my-expert --dry-run
      agentpack ecp refresh my-expert --json
      agentpack ecp refresh my-expert --rebuild
    """
    from ..payloads import refresh_payload

    gate: list[Any] = []
    payload = refresh_payload(
        pack, dry_run=dry_run, rebuild=rebuild, no_evals=no_evals, lock_timeout=lock_timeout, on_evals=gate.append
    )
    try:
        emit(payload, output, _refresh_text(payload))
    finally:
        if gate:
            from ..runlog import record_gate

            record_gate(gate[0], pack, payload, recording)


@click.command()
@click.argument("pack", type=PACK)
@click.option("--force", is_flag=True, help="Publish a build that is blocked because its evals failed.")
@output_option(choices=("text", "json"), command="ecp publish")
def publish(pack: Path, force: bool, output: str) -> None:
    """Publish the staged build a refresh left waiting for approval (publishing.on_pass: require_approval).

    \b
    Example:
      agentpack ecp refresh my-expert && agentpack ecp publish my-expert
    """
    from ..lifecycle.refresh import publish_pending

    result = publish_pending(pack, force=force)
    emit(
        envelope("ecp publish", True, **result),
        output,
        f"published run {result['run_id']}: " + ", ".join(result["indexes"]),
    )


@click.command()
@click.argument("pack", type=PACK)
@output_option(choices=("text", "json"), command="ecp rollback")
def rollback(pack: Path, output: str) -> None:
    """Restore PACK's previous published indexes and source revisions from the backups.

    \b
    Example:
      agentpack ecp rollback my-expert
    """
    from ..lifecycle.refresh import rollback_pack

    result = rollback_pack(pack)
    emit(
        envelope("ecp rollback", True, **result),
        output,
        f"rolled back run {result['rolled_back']}: restored " + ", ".join(result["indexes"]),
    )


@click.command()
@click.argument("pack", type=PACK)
@click.option("--no-source-check", is_flag=True, help="Do not read the sources to detect staleness.")
@output_option(choices=("text", "json"), command="ecp status")
def status(pack: Path, no_source_check: bool, output: str) -> None:
    """Show PACK's sources and revisions, index age and staleness, last refresh and eval results.

    \b
    Example:
      agentpack ecp status my-expert --json
    """
    from ..payloads import status_payload

    s = status_payload(pack, check_sources=not no_source_check)
    lines = [f"{s['skill']} ({s['expert_id']}): {'STALE' if s['stale'] else 'up to date'}"]
    for src in s["sources"]:
        rev = src["revision"]
        ident = rev.get("commit") or rev.get("hash") or rev.get("retrieved_at") or rev.get("query_hash") or "?"
        lines.append(
            f"  source {src['source_id']} ({src['type']}) at {str(ident)[:12]}"
            + (f", {src['changed_files']} changed file(s)" if src.get("changed_files") else "")
        )
    for idx in s["indexes"]:
        age = f", built {idx['age_seconds']} s ago" if idx.get("age_seconds") is not None else ""
        lines.append(
            f"  index {idx['index_id']} ({idx['format']}){age}"
            + (f": stale ({idx.get('stale_reason')})" if idx["stale"] else "")
        )
    for key in ("last_refresh", "last_evals", "pending", "interrupted"):
        if s.get(key):
            lines.append(
                f"  {key}: "
                + ", ".join(
                    f"{k}={v}"
                    for k, v in s[key].items()
                    if k in ("run_id", "at", "decision", "status", "passed", "total", "failed", "action")
                )
            )
    lines += [f"  problem: {p}" for p in s["problems"]]
    emit(s, output, "\n".join(lines))


@click.command()
@click.argument("pack", type=PACK)
@click.option("--dry-run", is_flag=True, help="List what would be deleted.")
@output_option(choices=("text", "json"), command="ecp prune")
def prune(pack: Path, dry_run: bool, output: str) -> None:
    """Apply retention: delete old logs and index backups (policy retention, logs/security retention_days),
    and the staging folders of killed builds and refreshes.

    \b
    Example:
      agentpack ecp prune my-expert --dry-run
    """
    from ..lifecycle.retention import prune_pack

    result = prune_pack(pack, dry_run=dry_run)
    removed = result["deleted_logs"] + result["deleted_backups"] + result["deleted_leftovers"]
    emit(
        envelope("ecp prune", True, **result),
        output,
        ("would delete" if dry_run else "deleted") + f" {len(removed)} item(s)" + "".join(f"\n  {r}" for r in removed),
    )


@click.command()
@click.argument("pack", type=PACK)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=2.0,
    show_default=True,
    help="Seconds between polls of the sources and the schedule.",
)
@click.option("--max-runs", type=click.IntRange(min=1), help="Stop after this many refreshes.")
@click.option("--duration", type=click.FloatRange(min=0), help="Stop after this many seconds.")
@output_option(choices=("text", "json"), command="ecp watch")
@record_options()
def watch(
    pack: Path, interval: float, max_runs: int | None, duration: float | None, output: str, recording: Recording
) -> None:
    """Run PACK's refresh_triggers until stopped (Ctrl-C): cron schedules, and a refresh whenever a
    source changes for event triggers. Exit status 1 when any refresh failed. With -o json, one
    JSON object per event (JSON Lines). Each refresh's eval gate is recorded (agentpack runs), as
    ecp refresh records it; a run that cannot be recorded is a warning, the watch goes on, and it
    exits 2 at the end.

    \b
    Examples:
      agentpack ecp watch my-expert
      agentpack ecp watch my-expert --json --max-runs 1
    """
    from ..lifecycle.watch import Watcher, install_signal_handlers

    def show(event: dict[str, Any]) -> None:
        if output == "json":
            click.echo(json.dumps(event, sort_keys=True), nl=True)
        elif event["event"] == "refresh":
            click.echo(
                f"{event['at']} refresh ({event['reason']}): {event['decision']}"
                + (f" run {event['run_id']}" if event.get("run_id") else "")
                + (f" [{event['error']}]" if event.get("error") else "")
            )
        elif event["event"] == "watching":
            click.echo(f"watching {pack}: schedules {event['schedules'] or '-'}, events {event['events'] or '-'}")
        else:
            click.echo(f"stopped after {event['runs']} refresh(es), {event['failures']} failed")
        sys.stdout.flush()

    unrecorded: list[str] = []

    def record(outcome: Any, result: dict[str, Any]) -> None:
        from agentpack.results.runs import StoreError

        from ..runlog import record_gate

        try:
            record_gate(outcome, pack, result, recording)
        except StoreError as exc:  # the watch goes on; the exit status says it
            unrecorded.append(str(exc))
            click.echo(f"warning: the eval gate of refresh {result.get('run_id')} was not recorded: {exc}", err=True)

    watcher = Watcher(pack, interval=interval, max_runs=max_runs, duration=duration, on_event=show, on_evals=record)
    install_signal_handlers(watcher)
    failures = watcher.run()
    if unrecorded:
        raise SystemExit(EXIT_USAGE)
    if failures:
        raise SystemExit(EXIT_PROBLEMS)


COMMANDS = [refresh, publish, rollback, status, prune, watch]
