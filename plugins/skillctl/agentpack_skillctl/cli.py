"""``agentpack skill ...`` and the ``skillctl`` console script (the same click group)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from agentpack.cli import clikit
from agentpack.cli.clikit import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    Recording,
    emit_json,
    emit_report,
    output_option,
    record_options,
    report_option,
)

from . import env

TEXT_OR_JSON = ("text", "json")


@clikit.group()
@click.option(
    "--root",
    envvar=list(env.ROOT),
    type=click.Path(file_okay=False, path_type=Path),
    help="The skills/ tree (or a folder holding one). Default: $AGENTPACK_SKILLCTL_ROOT (alias $SKILLCTL_ROOT), "
    "else ./skills.",
)
@click.pass_context
def skill(ctx: click.Context, root: Path | None) -> None:
    """Deterministic skills (skill.yaml, skill/v1): schema-checked JSON in and out, no LLM.

    \b
    Examples:
      agentpack skill --root examples/skills list
      agentpack skill run fs.hash_tree --input in.json --report run.json
      agentpack skill validate --all --strict
      agentpack skill test schema.validate_json -o junit > junit.xml
    """
    ctx.ensure_object(dict)
    ctx.obj["root"] = str(root) if root else None


@skill.command("list")
@output_option(choices=TEXT_OR_JSON, command="skill list")
@click.pass_context
def list_(ctx: click.Context, output: str) -> None:
    """List the skills of the library root.

    \b
    Example:
      skillctl --root examples/skills list --json
    """
    from .api import list_skills
    from .library import library_root

    root = library_root(ctx.obj["root"])
    skills = list_skills(root)
    if output == "json":
        emit_json("skill list", True, root=str(root), skills=skills)
        return
    for s in skills:
        if s.get("error"):
            click.echo(f"{s['path']}  (unreadable: {s['error']})")
        else:
            click.echo(f"{s['id']}  {s['version']}  {s['description'][:70]}")


@skill.command()
@click.argument("ref")
@output_option(choices=TEXT_OR_JSON, command="skill describe")
@click.pass_context
def describe(ctx: click.Context, ref: str, output: str) -> None:
    """Show a skill's contract: REF is a skill.id or a skill folder.

    \b
    Example:
      skillctl describe schema.validate_json --json
    """
    from .api import describe_skill

    info = describe_skill(ref, ctx.obj["root"])
    if output == "json":
        emit_json("skill describe", "errors" not in info, skill=info)
    else:
        _print_description(info)
    if "errors" in info:  # a schema that cannot be read: shown, and the exit status says so
        for error in info["errors"] if output != "json" else ():
            click.echo(f"error: {error}", err=True)
        raise SystemExit(EXIT_PROBLEMS)


def _print_description(info: dict) -> None:
    m = info["manifest"]

    def field(*keys: str) -> Any:  # skill.yaml may be invalid: any level may be missing or of another type
        value: Any = m
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    command = field("runtime", "command")
    click.echo(f"{info['id']} {info['version']}  ({info['path']})")
    click.echo(f"  {info['description']}")
    click.echo(f"  command: {' '.join(map(str, command)) if isinstance(command, list) else command or ''}")
    click.echo(f"  determinism: {json.dumps(field('determinism'), default=str)}")
    click.echo(f"  access: {json.dumps(field('security', 'access') or {}, default=str)}")
    for which in ("input", "output"):
        schema = info.get(f"{which}Schema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        props = ", ".join(sorted(map(str, properties))) if isinstance(properties, dict) else ""
        click.echo(f"  {which}: {props or '(see schema)'}")


@skill.command()
@click.argument("refs", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Validate the whole library root as a tree.")
@click.option("--strict", is_flag=True, help="Also require README.md and an access manifest.")
@output_option(command="skill validate")
@click.pass_context
def validate(ctx: click.Context, refs: tuple[str, ...], all_: bool, strict: bool, output: str) -> None:
    """Validate skills (by id or folder), or the whole tree with --all; exit 1 on any error.

    \b
    Examples:
      skillctl validate --all
      agentpack skill validate fs.hash_tree --strict -o sarif > skills.sarif
    """
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.io.errors import PackError
    from agentpack.kernel.models import Finding, Report, ValidationItem

    from .library import find_skill, library_root
    from .manifest import load_skill
    from .validation import validate_skill, validate_tree

    if not refs and not all_:
        raise click.UsageError("name skills to validate, or pass --all")
    items = []
    if all_:
        tree = library_root(ctx.obj["root"])
        items.append(
            ValidationItem(
                path=str(tree),
                format="skillctl",
                findings=sorted(validate_tree(tree, strict=strict), key=lambda f: f.sort_key()),
            )
        )
    for ref in refs:
        directory = find_skill(ref, ctx.obj["root"])
        try:
            findings = validate_skill(load_skill(directory), strict=strict)
        except PackError as exc:
            findings = [Finding.error("SKC100", exc.message, file=exc.file, line=exc.line, column=exc.column)]
        items.append(
            ValidationItem(
                path=str(directory), format="skillctl", findings=sorted(findings, key=lambda f: f.sort_key())
            )
        )
    report = Report(command="skill validate", generated_at=SYSTEM_CLOCK.now(), items=items)
    emit_report(report, output)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


@skill.command()
@click.argument("ref")
@click.option(
    "-i", "--input", "input_file", required=True, metavar="FILE|-", help="The input JSON (a file, or - for stdin)."
)
@click.option(
    "--output",
    "output_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the output JSON here (atomically) instead of stdout.",
)
@click.option("--timeout-ms", type=click.IntRange(min=1), help="Override runtime.timeoutMs.")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The folder filesystem globs and input paths are relative to. Default: the current folder.",
)
@report_option(
    "Also write the run report; its format follows the suffix: .json the spec's run report, .html the run's page, "
    ".xml JUnit, .sarif, .txt, or a plugin reporter's."
)
@click.option("--cache/--no-cache", default=False, help="Reuse outputs of deterministic skills (opt-in).")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Cache folder. Default: $AGENTPACK_SKILLCTL_CACHE_DIR (alias $SKILLCTL_CACHE_DIR) "
    "or ~/.cache/agentpack/skillctl.",
)
@click.option("--check-determinism", is_flag=True, help="Run twice and fail unless the output bytes are equal.")
@click.option("--quiet-logs", is_flag=True, help="Do not pass the skill's stderr logs through.")
# --output names the output file here (spec 9, as the origin's runner): JSON is --json only
@click.option("--json", "as_json", is_flag=True, help="Print an envelope with the output and the run report.")
@click.option(
    "--require-sandbox",
    is_flag=True,
    help="Refuse to run when this machine cannot give the sandbox every protection (see the report's sandbox).",
)
@click.pass_context
def run(
    ctx: click.Context,
    ref: str,
    input_file: str,
    output_file: Path | None,
    timeout_ms: int | None,
    workspace: Path | None,
    report_file: Path | None,
    cache: bool,
    cache_dir: Path | None,
    check_determinism: bool,
    quiet_logs: bool,
    as_json: bool,
    require_sandbox: bool,
) -> None:
    """Run skill REF (a skill.id or folder) on an input JSON; exit 1 unless the run is ok.

    \b
    Examples:
      skillctl run fs.hash_tree --input request.json
      echo '{"schema": {"type": "integer"}, "instance": 3}' | agentpack skill run schema.validate_json -i -
      agentpack skill run ./skills/fs-hash-tree -i in.json --output out.json --report run.json
    """
    from .runcmd import run_command

    code = run_command(
        root=ctx.obj["root"],
        ref=ref,
        input_file=input_file,
        output_file=output_file,
        timeout_ms=timeout_ms,
        workspace=workspace,
        report_file=report_file,
        cache=cache,
        cache_dir=cache_dir,
        check_determinism=check_determinism,
        quiet_logs=quiet_logs,
        as_json=as_json,
        require_sandbox=require_sandbox,
    )
    if code:
        raise SystemExit(code)


@skill.command()
@click.argument("refs", nargs=-1)
@click.option("--filter", "filter_", help="Only cases whose id contains this (e.g. fixture:basic, test:).")
@click.option("--check-determinism", is_flag=True, help="Run each fixture twice and compare output bytes.")
@report_option()
@output_option(command="skill test")
@record_options()
@click.pass_context
def test(
    ctx: click.Context,
    refs: tuple[str, ...],
    filter_: str | None,
    check_determinism: bool,
    report_file: Path | None,
    output: str,
    recording: Recording,
) -> None:
    """Run the fixtures and tests/ of every skill (or of the named ones); exit 1 on a failure.

    \b
    Examples:
      skillctl test
      agentpack skill test fs.hash_tree --check-determinism -o junit > junit.xml
    """
    from agentpack.io import console
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.kernel.models import EvalOptions, Report

    from .library import find_skill, library_root
    from .skilltest import INTERRUPTED, evaluate

    log = console.logger(__name__)
    options = EvalOptions(filter=filter_, options={"check_determinism": check_determinism})
    targets = [find_skill(ref, ctx.obj["root"]) for ref in refs] or [library_root(ctx.obj["root"])]
    started, evaluations = SYSTEM_CLOCK.now(), []
    with console.progress("skill test", total=len(targets)) as bar:
        for target in targets:
            log.info("skill test: %s", target)
            evaluations.append(evaluate(target, options, bar=bar))
            log.info("skill test: %s: %s", target, evaluations[-1].totals)
            if evaluations[-1].aborted == INTERRUPTED:
                break
    interrupted = evaluations[-1].aborted == INTERRUPTED
    report = Report(command="skill test", generated_at=started, evaluations=evaluations)
    emit_report(report, output, report_file)
    from agentpack.results.runs import record_run

    settings = {"refs": list(refs), "filter": filter_, "check_determinism": check_determinism}
    record_run(
        report,
        command="skill test",
        input=targets[0] if len(targets) == 1 else library_root(ctx.obj["root"]),
        settings=settings,
        status="interrupted" if interrupted else None,
        recording=recording,
    )
    if interrupted:
        click.echo("interrupted", err=True)
        raise SystemExit(EXIT_INTERRUPTED)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


@skill.command()
@click.argument("skill_id")
@click.argument("slug")
@click.option("--spec-id", default="SPEC-TODO", show_default=True, help="governance.specId of the new skill.")
@click.option("--description", default=None, help="One-line description.")
@click.pass_context
def new(ctx: click.Context, skill_id: str, slug: str, spec_id: str, description: str | None) -> None:
    """Scaffold skill SKILL_ID in <root>/SLUG from the template (it validates and passes its smoke test).

    \b
    Example:
      agentpack skill --root skills new text.word_count word-count --spec-id SPEC-12
    """
    from .library import library_root
    from .scaffold import scaffold

    root = ctx.obj["root"]
    tree = Path(root) if root else (Path("skills") if Path("skills").is_dir() else Path("."))
    if root:
        tree = library_root(root) if Path(root).is_dir() else Path(root)
    target = scaffold(tree, skill_id, slug, spec_id=spec_id, description=description)
    click.echo(f"created {target}")


@skill.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--id", "skill_id", help="The skill's id (default: the folder's name in snake_case).")
@click.option("--spec-id", default="SPEC-TODO", show_default=True, help="governance.specId of the new skill.")
@click.option("--description", default=None, help="One-line description.")
def init(directory: Path, skill_id: str | None, spec_id: str, description: str | None) -> None:
    """Create a deterministic skill in DIRECTORY from the template (it validates and passes its tests).

    \b
    Example:
      agentpack skill init skills/word-count --id text.word_count
    """
    from agentpack.io.fsutil import SHARED, atomic_write_text
    from agentpack.kernel.registry import schema_modeline

    from .scaffold import scaffold

    target = scaffold(
        directory.parent,
        skill_id or directory.name.replace("-", "_"),
        directory.name,
        spec_id=spec_id,
        description=description,
    )
    manifest = target / "skill.yaml"
    line = schema_modeline(clikit.host().schemas(), "skillctl/skill", manifest, target)
    atomic_write_text(manifest, f"{line}\n{manifest.read_text(encoding='utf-8')}", mode=SHARED)
    click.echo(f"created {target}")
    click.echo(f"next: agentpack validate {target}")
    click.echo(f"      agentpack skill test {target}")


@skill.command("audit-commits")
@click.argument("rev_range", required=False)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The git repository.",
)
@output_option(choices=TEXT_OR_JSON, command="skill audit-commits")
def audit_commits(rev_range: str | None, repo: Path, output: str) -> None:
    """Report commits that touch more than one skill package (one skill per commit); exit 1 if any.

    REV_RANGE is anything git log takes (default: HEAD, the whole history).

    \b
    Examples:
      agentpack skill audit-commits origin/main..HEAD
      skillctl audit-commits --json
    """
    from .audit import audit

    result = audit(repo, rev_range or "HEAD")
    if output == "json":
        emit_json("skill audit-commits", not result["violations"], **result)
    else:
        for v in result["violations"]:
            click.echo(
                f"{v['commit'][:12]} touches {len(v['skills'])} skill packages: {', '.join(v['skills'])}"
                f"  ({v['subject']})"
            )
        click.echo(f"{result['commits']} commits checked, {len(result['violations'])} touch more than one skill")
    if result["violations"]:
        raise SystemExit(EXIT_PROBLEMS)


def main(argv: list[str] | None = None) -> int:
    """The ``skillctl`` console script: the ``skill`` group with agentpack's exit codes."""
    from agentpack.io.errors import AgentpackError

    try:
        skill.main(args=argv, prog_name="skillctl", standalone_mode=False)
        return EXIT_OK
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except click.Abort:
        click.echo("aborted", err=True)
        return EXIT_USAGE
    except AgentpackError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # pragma: no cover - a bug
        click.echo(f"internal error in skillctl: {exc!r}", err=True)
        return EXIT_INTERNAL
