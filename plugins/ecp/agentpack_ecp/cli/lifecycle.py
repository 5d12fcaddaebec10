"""Lifecycle commands (refresh, publish, rollback, watch, prune, package, verify, sign, keygen, status)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

EXIT_PROBLEMS = 1
PACK = click.Path(exists=True, file_okay=False, path_type=Path)


def envelope(command: str, ok: bool, **fields: Any) -> dict[str, Any]:
    return {"schema_version": 1, "command": f"ecp {command}", "ok": ok, **fields}


def emit(payload: dict[str, Any], as_json: bool, text: str) -> None:
    """Print ``payload`` as JSON or ``text``; exit 1 when the payload is not ok."""
    from agentpack.cli import print_json

    if as_json:
        print_json(payload)
    elif text:
        click.echo(text)
    if not payload["ok"]:
        raise SystemExit(EXIT_PROBLEMS)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print the JSON envelope.")(f)


def _findings_text(findings: list[dict[str, Any]]) -> str:
    return "\n".join(f"{f['severity']}: {f['code']} {f.get('file', '')}: {f['message']}" for f in findings)


# -- packaging ---------------------------------------------------------------------------------
@click.command()
@click.argument("pack", type=PACK)
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The ZIP file to write.",
)
@click.option("--exclude", "excludes", multiple=True, metavar="GLOB", help="Also leave out these (gitignore) globs.")
@click.option("--include-logs", is_flag=True, help="Package expert/logs/ too.")
@click.option("--include-backups", is_flag=True, help="Package index backups (.backup/) too.")
@click.option(
    "--allow-secrets",
    is_flag=True,
    help="Package a pack with security.contains_secrets: true (only for an encrypted channel).",
)
@click.option(
    "--sign-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Sign the package with this ed25519 private key.",
)
@json_option
def package(
    pack: Path,
    out: Path,
    excludes: tuple[str, ...],
    include_logs: bool,
    include_backups: bool,
    allow_secrets: bool,
    sign_key: Path | None,
    as_json: bool,
) -> None:
    """Package PACK as a reproducible ZIP with expert/package.json (spec 6.5).

    Logs, backups, staging and lifecycle state are left out. Set
    SOURCE_DATE_EPOCH to fix the timestamps; otherwise the newest file
    modification time is used, so an unchanged tree gives the same bytes.

    \b
    Examples:
      agentpack ecp package my-expert -o my-expert.zip
      SOURCE_DATE_EPOCH=1767225600 agentpack ecp package my-expert -o dist/my-expert.zip --sign-key release.key
    """
    from ..packaging.package import package_pack
    from ..packaging.sign import sign_package

    summary = package_pack(
        pack,
        out,
        extra_excludes=excludes,
        include_logs=include_logs,
        include_backups=include_backups,
        allow_secrets=allow_secrets,
    )
    if sign_key:
        summary["signature"] = sign_package(out, sign_key)
    emit(
        envelope("package", True, **summary),
        as_json,
        f"{summary['package']}: {summary['files']} files, package_sha256 {summary['package_sha256']}",
    )


@click.command()
@click.argument("target", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--key",
    "keys",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A trusted ed25519 public key (PEM); the package must carry a valid signature by one of them.",
)
@click.option("--require-signature", is_flag=True, help="Fail when the package has no valid signature.")
@click.option("--max-bytes", type=click.IntRange(min=1), help="Largest total uncompressed size accepted.")
@click.option("--max-entries", type=click.IntRange(min=1), help="Most archive entries accepted.")
@click.option("--max-ratio", type=click.FloatRange(min=1), help="Largest compression ratio accepted per entry.")
@json_option
def verify(
    target: Path,
    keys: tuple[Path, ...],
    require_signature: bool,
    max_bytes: int | None,
    max_entries: int | None,
    max_ratio: float | None,
    as_json: bool,
) -> None:
    """Verify a package ZIP or an unpacked pack DIR against its expert/package.json.

    Checks every listed file's sha256 and size, refuses unlisted files, unsafe
    (zip-slip) and symlink entries, archive bombs, and checks signatures.

    \b
    Examples:
      agentpack ecp verify my-expert.zip
      agentpack ecp verify my-expert.zip --key release.key.pub
      agentpack ecp verify unpacked/my-expert --json
    """
    from dataclasses import replace

    from ..packaging.signing import load_public_key
    from ..packaging.verify import Limits
    from ..packaging.verify import verify as run

    limits = Limits()
    for name, value in (("max_total_bytes", max_bytes), ("max_entries", max_entries), ("max_ratio", max_ratio)):
        if value is not None:
            limits = replace(limits, **{name: value})
    result = run(target, trusted=[load_public_key(k) for k in keys], require_signature=require_signature, limits=limits)
    data = result.as_dict()
    data.pop("ok")
    if result.ok:
        signed = ", ".join(f"{s['key_id']} ({s['message']})" for s in result.signatures) or "unsigned"
        text = f"{target}: ok, {result.checked_files} files verified, {signed}"
    else:
        text = f"{target}: FAILED\n" + _findings_text(data["findings"])
    emit(envelope("verify", result.ok, **data), as_json, text)


@click.command()
@click.argument("target", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--key",
    "key",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The ed25519 private key (PEM) to sign with.",
)
@click.option("--replace", is_flag=True, help="Replace an existing signature by the same key.")
@json_option
def sign(target: Path, key: Path, replace: bool, as_json: bool) -> None:
    """Sign a package ZIP (or unpacked pack) with an ed25519 key; the package must verify first.

    \b
    Example:
      agentpack ecp keygen release.key
      agentpack ecp sign my-expert.zip --key release.key
      agentpack ecp verify my-expert.zip --key release.key.pub
    """
    from ..packaging.sign import sign_package

    summary = sign_package(target, key, replace=replace)
    emit(envelope("sign", True, **summary), as_json, f"{target}: signed by key {summary['key_id']}")


@click.command()
@click.argument("keyfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
@json_option
def keygen(keyfile: Path, force: bool, as_json: bool) -> None:
    """Create an ed25519 key pair: KEYFILE (private, mode 0600) and KEYFILE.pub.

    \b
    Example:
      agentpack ecp keygen ~/.config/agentpack/release.key
    """
    from ..packaging.signing import generate_keypair

    summary = generate_keypair(keyfile, force=force)
    emit(
        envelope("keygen", True, **summary),
        as_json,
        f"private key {summary['private_key']}\npublic key  {summary['public_key']}\nkey id      {summary['key_id']}",
    )


# -- maintenance -------------------------------------------------------------------------------
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
@json_option
def refresh(pack: Path, dry_run: bool, rebuild: bool, no_evals: bool, lock_timeout: float, as_json: bool) -> None:
    """Refresh PACK's indexes from its sources, gated by its evals and maintenance policy.

    Builds only what changed (git diff for git sources, a file-manifest diff
    otherwise) into a staging area, runs validation.eval_suites on the staged
    build and publishes it by an atomic swap (or waits for 'ecp publish').
    Exit status 1 when the evals fail, the build is rolled back or blocked, or
    a budget refuses the update.

    \b
    Examples:
      agentpack ecp refresh my-expert --dry-run
      agentpack ecp refresh my-expert --json
      agentpack ecp refresh my-expert --rebuild
    """
    from ..lifecycle.refresh import refresh as run

    result = run(pack, dry_run=dry_run, rebuild=rebuild, no_evals=no_evals, lock_timeout=lock_timeout)
    emit(envelope("refresh", result["exit_status"] == 0, **result), as_json, _refresh_text(result))


@click.command()
@click.argument("pack", type=PACK)
@click.option("--force", is_flag=True, help="Publish a build that is blocked because its evals failed.")
@json_option
def publish(pack: Path, force: bool, as_json: bool) -> None:
    """Publish the staged build a refresh left waiting for approval (publishing.on_pass: require_approval).

    \b
    Example:
      agentpack ecp refresh my-expert && agentpack ecp publish my-expert
    """
    from ..lifecycle.refresh import publish_pending

    result = publish_pending(pack, force=force)
    emit(
        envelope("publish", True, **result),
        as_json,
        f"published run {result['run_id']}: " + ", ".join(result["indexes"]),
    )


@click.command()
@click.argument("pack", type=PACK)
@json_option
def rollback(pack: Path, as_json: bool) -> None:
    """Restore PACK's previous published indexes and source revisions from the backups.

    \b
    Example:
      agentpack ecp rollback my-expert
    """
    from ..lifecycle.refresh import rollback_pack

    result = rollback_pack(pack)
    emit(
        envelope("rollback", True, **result),
        as_json,
        f"rolled back run {result['rolled_back']}: restored " + ", ".join(result["indexes"]),
    )


@click.command()
@click.argument("pack", type=PACK)
@click.option("--no-source-check", is_flag=True, help="Do not read the sources to detect staleness.")
@json_option
def status(pack: Path, no_source_check: bool, as_json: bool) -> None:
    """Show PACK's sources and revisions, index age and staleness, last refresh and eval results.

    \b
    Example:
      agentpack ecp status my-expert --json
    """
    from ..lifecycle.status import pack_status

    s = pack_status(pack, check_sources=not no_source_check)
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
    emit(envelope("status", True, **s), as_json, "\n".join(lines))


@click.command()
@click.argument("pack", type=PACK)
@click.option("--dry-run", is_flag=True, help="List what would be deleted.")
@json_option
def prune(pack: Path, dry_run: bool, as_json: bool) -> None:
    """Apply retention: delete old logs and index backups (policy retention, logs/security retention_days).

    \b
    Example:
      agentpack ecp prune my-expert --dry-run
    """
    from ..lifecycle.retention import prune_pack

    result = prune_pack(pack, dry_run=dry_run)
    removed = result["deleted_logs"] + result["deleted_backups"]
    emit(
        envelope("prune", True, **result),
        as_json,
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
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event (JSON Lines).")
def watch(pack: Path, interval: float, max_runs: int | None, duration: float | None, as_json: bool) -> None:
    """Run PACK's refresh_triggers until stopped (Ctrl-C): cron schedules, and a refresh whenever a
    source changes for event triggers. Exit status 1 when any refresh failed.

    \b
    Examples:
      agentpack ecp watch my-expert
      agentpack ecp watch my-expert --json --max-runs 1
    """
    import json
    import sys

    from ..lifecycle.watch import Watcher, install_signal_handlers

    def show(event: dict[str, Any]) -> None:
        if as_json:
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

    watcher = Watcher(pack, interval=interval, max_runs=max_runs, duration=duration, on_event=show)
    install_signal_handlers(watcher)
    if watcher.run():
        raise SystemExit(EXIT_PROBLEMS)


COMMANDS = [refresh, publish, rollback, status, watch, prune, package, verify, sign, keygen]


def attach(group: click.Group) -> None:
    """Add the lifecycle commands to the ``ecp`` group."""
    for command in COMMANDS:
        group.add_command(command)
