"""The ``agentpack`` command line. Plugins add command groups through ``agentpack_register_commands``.

Exit codes: 0 ok; 1 ran and found problems; 2 usage, configuration or I/O
error; 3 internal error or plugin crash.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentpack import __version__
from agentpack.cli.clikit import (
    CONTEXT_SETTINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    Recording,
    emit_json,
    emit_report,
    host,
    jobs_option,
    mcp_option,
    output_option,
    pairs_option,
    print_json,
    record_options,
    report_option,
    with_shared_options,
)
from agentpack.cli.init import init
from agentpack.cli.runs import runs
from agentpack.cli.schema import schema
from agentpack.cli.view import view

if TYPE_CHECKING:
    from agentpack.kernel.registry import CommandSpec


# -- the group --------------------------------------------------------------------------------
class AgentpackGroup(click.Group):
    """Built-in commands plus plugin commands loaded only when they run."""

    def _plugin_specs(self) -> dict[str, CommandSpec]:
        try:
            return host().commands()
        except Exception as exc:  # a broken plugin must not hide the built-in commands
            click.echo(f"warning: plugins not loaded: {exc}", err=True)
            return {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugin_specs()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None:
            spec = self._plugin_specs().get(name)
            command = spec.load() if spec else None
        if command is not None:
            return with_shared_options(command)
        from agentpack.kernel.known import install_hint, plugin_for_command

        known = plugin_for_command(name)
        if known is None:
            return None
        from agentpack.kernel.entrypoints import entry_points
        from agentpack.kernel.host import ENTRY_POINT_GROUP

        if any(ep.name == known.name for ep in entry_points(ENTRY_POINT_GROUP)):
            ctx.fail(
                f"'{name}' comes with plugin '{known.name}', which is installed but not loaded "
                "(check AGENTPACK_PLUGINS and AGENTPACK_DISABLE_PLUGINS)"
            )
        ctx.fail(f"'{name}' comes with plugin '{known.name}', which is not installed: {install_hint(known)}")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        specs = self._plugin_specs()
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit=70)))
            else:
                rows.append((name, specs[name].help or f"commands of plugin '{specs[name].plugin}'"))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"agentpack {__version__}")
    try:
        for info in host().plugin_infos():
            if not info.builtin:
                click.echo(f"  {info.name} {info.version or '?'} ({info.distribution or 'local'})")
    except Exception as exc:
        click.echo(f"  (plugins not loaded: {exc})", err=True)
    ctx.exit(0)


@click.group(cls=AgentpackGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version of agentpack and of every plugin.",
)
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars or notes on stderr.")
def cli(verbose: int, quiet: bool) -> None:
    """Load, validate, query, evaluate and report on packaged-agent formats.

    \b
    Examples:
      agentpack plugins
      agentpack validate path/to/skill --strict
      agentpack query path/to/expert-skill "How are tokens refreshed?"
      agentpack eval path/to/pack -o junit > results.xml

    Shell completion: eval "$(_AGENTPACK_COMPLETE=bash_source agentpack)"
    """
    from agentpack.io import console

    console.QUIET = quiet
    console.verbosity(verbose)  # without -v, Python's last-resort handler still shows warnings on stderr


@cli.command()
@output_option(choices=("text", "json"), command="plugins")
def plugins(output: str) -> None:
    """List installed plugins, their versions, hooks and formats.

    \b
    Example:
      agentpack plugins --json
    """
    h = host()
    formats = h.formats()
    rows: list[dict[str, Any]] = []
    for info in h.plugin_infos():
        rows.append(
            {
                "name": info.name,
                "version": info.version,
                "distribution": info.distribution,
                "builtin": info.builtin,
                "hooks": list(info.hooks),
                "formats": sorted(f.name for f in formats.values() if f.plugin == info.name),
            }
        )
    if output == "json":
        emit_json("plugins", True, plugins=rows)
        return
    for row in rows:
        kind = " (built-in)" if row["builtin"] else ""
        click.echo(f"{row['name']} {row['version'] or ''}{kind}")
        if row["formats"]:
            click.echo(f"  formats: {', '.join(row['formats'])}")
        click.echo(f"  hooks: {', '.join(row['hooks'])}")


@cli.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@output_option(choices=("text", "json"), command="detect")
def detect(path: Path, output: str) -> None:
    """Say which format PATH is (exit 1 when none of the installed formats claims it).

    \b
    Example:
      agentpack detect examples/ecp/conformance-pack
    """
    found = host().detect_all(path)
    if output == "json":
        emit_json(
            "detect",
            bool(found),
            path=str(path),
            format=found[0].format if found else None,
            candidates=[d.as_dict() for d in found],
        )
    elif found:
        click.echo(f"{path}: {found[0].format} ({found[0].reason})")
        for other in found[1:]:
            click.echo(f"  also: {other.format} ({other.reason}, confidence {other.confidence})")
    else:
        click.echo(f"{path}: no installed format recognises it")
    if not found:
        raise SystemExit(EXIT_PROBLEMS)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--strict", is_flag=True, help="Also apply the format's strict (profile) rules.")
@click.option("--format", "format_name", help="Treat every PATH as this format instead of detecting it.")
@click.option(
    "--skill-root",
    "skill_roots",
    multiple=True,
    metavar="DIR",
    help="Also search this hidden folder (relative, e.g. .windsurf/skills) in every folder walked; repeatable.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERN",
    help="Do not search folders matching this pattern (a name, or a path below PATH); repeatable.",
)
@mcp_option()
@report_option()
@output_option(command="validate")
def validate(
    paths: tuple[Path, ...],
    strict: bool,
    format_name: str | None,
    skill_roots: tuple[str, ...],
    exclude: tuple[str, ...],
    mcp: list[Any],
    report_file: Path | None,
    output: str,
) -> None:
    """Validate packs; exit 1 when any has an error.

    A folder that no format claims stands for every pack under it, so
    `agentpack validate skills/` validates each skill, and `agentpack
    validate .` also the skills in the folders agent hosts read
    (.claude/skills, .agents/skills, .github/skills, ...). --skill-root and
    --exclude override the project's settings (agentpack.toml or
    [tool.agentpack] in pyproject.toml; see docs/configuration.md). With
    --mcp, every skill the server lists is validated too, as the same files
    on disk would be.

    \b
    Examples:
      agentpack validate skills/my-skill
      agentpack validate skills/
      agentpack validate expert-skill --strict -o sarif > results.sarif
      agentpack validate . -o github --report results.sarif
      agentpack validate --mcp docs=https://example.org/mcp
    """
    if not paths and not mcp:
        raise click.UsageError("name a PATH to validate or a server with --mcp")
    from agentpack.io import console
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.io.errors import PackError
    from agentpack.kernel.config import load
    from agentpack.kernel.lazyreport import LazyItem, LazyReport
    from agentpack.kernel.packwalk import Walk, expand

    log = console.logger(__name__)
    h = host()
    items = []
    walk = Walk.of(load().with_flags(skill_roots=skill_roots, exclude=exclude))
    targets = [(path, format_name) for path in paths] if format_name else expand(h, paths, walk)
    for path, format in targets:
        try:
            pack = h.load(path, format)
        except PackError as exc:
            log.info("validate %s: cannot load: %s", path, exc.message)
            from agentpack.kernel.models import Finding  # pydantic only when there is a finding

            finding = Finding.error(
                "PACK", exc.message, file=exc.file or str(path), line=exc.line, column=exc.column, hint=exc.hint
            )
            items.append(LazyItem(str(path), None, [finding]))
            continue
        log.info("validate %s: format %s%s", path, pack.format, " (strict)" if strict else "")
        items.append(LazyItem(str(path), pack.format, h.validate(pack, strict=strict)))
        log.debug("validate %s: %d finding(s)", path, len(items[-1].findings))
    if mcp:
        from agentpack.mcp.skillviews import validation_items

        with _mcp_sources(mcp, paths, walk.roots) as sources:
            items += validation_items(h, sources, strict=strict)
    report = LazyReport("validate", SYSTEM_CLOCK.now(), items)
    emit_report(report, output, report_file)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


@cli.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.argument("question")
@click.option("-k", "--top-k", default=5, show_default=True, type=click.IntRange(min=1), help="Chunks to retrieve.")
@click.option("--mode", help="Retrieval mode the format offers (e.g. keyword, fts, vector, hybrid).")
@click.option("--source-id", help="Only material from this source.")
@click.option("--path-prefix", help="Only material under this path.")
@click.option(
    "--query-vector-file",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON file with a query vector (and its query_embedding) for vector indexes.",
)
@pairs_option("--filter", "filters", help_text="Other format-specific filters (KEY=VALUE, repeatable).")
@pairs_option(help_text="Format-specific options (KEY=VALUE, repeatable).")
@output_option(command="query")
def query(
    path: Path,
    question: str,
    top_k: int,
    mode: str | None,
    source_id: str | None,
    path_prefix: str | None,
    query_vector_file: str | None,
    filters: dict[str, str],
    options: dict[str, str],
    output: str,
) -> None:
    """Ask a pack a QUESTION and get an answer with citations.

    \b
    Examples:
      agentpack query expert-skill "How do I rotate keys?"
      agentpack query expert-skill "rotate keys" --source-id repo --path-prefix docs/ --json

    -o json prints the JSON envelope with the format's full response; any other
    reporter (-o html, -o junit...) renders the answer's findings.
    """
    from agentpack.kernel.packtypes import QueryRequest

    h = host()
    pack = h.load(path)
    filter_map = dict(filters)
    if source_id:
        filter_map["source_id"] = source_id
    if path_prefix:
        filter_map["path_prefix"] = path_prefix
    option_map: dict[str, Any] = dict(options)
    if query_vector_file:
        option_map["query_vector_file"] = str(query_vector_file)
    request = QueryRequest(question=question, top_k=top_k, mode=mode, filters=filter_map, options=option_map)
    from agentpack.io import console

    console.info(
        __name__, "query %s (format %s): top %d, mode %s, filters %s", path, pack.format, top_k, mode, filter_map
    )
    response = h.query(pack, request)
    console.info(
        __name__, "query %s: %d citation(s), %d finding(s)", path, len(response.citations), len(response.findings)
    )
    if output == "json":
        emit_json(
            "query",
            True,
            path=str(path),
            format=pack.format,
            response=response.payload or response.as_json(),
            findings=[f.model_dump(mode="json") for f in response.findings],
        )
        return
    if output != "text":
        from agentpack.io.clock import SYSTEM_CLOCK
        from agentpack.kernel.models import Report, ValidationItem

        item = ValidationItem(path=str(path), format=pack.format, findings=list(response.findings))
        emit_report(Report(command="query", generated_at=SYSTEM_CLOCK.now(), items=[item]), output)
        return
    click.echo(response.answer or "(no answer)")
    if response.citations:
        click.echo("\nSources:")
        for i, c in enumerate(response.citations, 1):
            click.echo(f"  [{i}] {c.label}")
    for f in response.findings:
        click.echo(f"{f.severity}: {f.code} {f.message}", err=True)


@cli.command(name="eval")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--suite", help="Run only this suite.")
@click.option("--filter", "filter_", help="Run only cases whose id matches this substring or tag.")
@jobs_option("Cases or scenarios in parallel, for formats that can run them so.")
@pairs_option(help_text="Format-specific evaluation options (KEY=VALUE, repeatable).")
@report_option()
@record_options()
@output_option(command="eval")
def eval_(
    paths: tuple[Path, ...],
    suite: str | None,
    filter_: str | None,
    jobs: int,
    options: dict[str, str],
    report_file: Path | None,
    recording: Recording,
    output: str,
) -> None:
    """Run the evaluations of packs, one report for all; exit 1 when any case fails. Each pack's run is
    recorded (agentpack runs).

    A folder that no format claims stands for every pack under it.

    \b
    Examples:
      agentpack eval expert-skill
      agentpack eval expert-skill --suite smoke -o junit > junit.xml
      agentpack eval skills/fs-hash-tree skills/text-word-count
      agentpack eval manifest.yaml --report out.html --tag nightly
    """
    import time

    from agentpack.io import console
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.kernel.models import EvalOptions, EvalReport, Report
    from agentpack.kernel.packwalk import expand

    log = console.logger(__name__)
    h = host()
    packs = [h.load(path, format) for path, format in expand(h, paths)]
    started = SYSTEM_CLOCK.now()
    eval_options = EvalOptions(suite=suite, filter=filter_, jobs=jobs, options=dict(options))
    results: list[EvalReport] = []
    interrupted = False
    for pack in packs:
        log.info("eval %s: format %s, suite %s, filter %s, %d job(s)", pack.path, pack.format, suite, filter_, jobs)
        t0 = time.monotonic()
        try:
            result = h.evaluate(pack, eval_options)
        except KeyboardInterrupt:  # Ctrl-C: the report and the run say so, and the exit status is 130
            interrupted = True
            result = EvalReport(
                name=pack.name or pack.path.name,
                format=pack.format,
                path=str(pack.path),
                started_at=started,
                duration_s=round(time.monotonic() - t0, 3),
                aborted="interrupted (Ctrl-C) before the evaluation finished",
            )
        log.info("eval %s: %s", pack.path, result.totals)
        results.append(result)
        if interrupted:
            break
    report = Report(command="eval", generated_at=started, evaluations=results)
    emit_report(report, output, report_file)
    from agentpack.results.runs import record_run

    settings = {"suite": suite, "filter": filter_, "jobs": jobs, "options": dict(options)}
    status = "interrupted" if interrupted else None
    for pack, result in zip(packs, results, strict=False):  # an interrupted eval ran fewer packs
        one = Report(command="eval", tool=report.tool, generated_at=started, evaluations=[result])
        record_run(one, command="eval", input=pack.path, settings=settings, status=status, recording=recording)
    if interrupted:
        click.echo("interrupted", err=True)
        raise SystemExit(EXIT_INTERRUPTED)
    aborted = [result.aborted for result in results if result.aborted]
    for reason in aborted:
        click.echo(f"error: {reason}", err=True)
    if aborted:
        raise SystemExit(EXIT_USAGE)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


# -- skill-md: what hosts read from SKILL.md (skills-ref's read-properties and to-prompt) ---------
@cli.group(name="skill-md")
def skill_md() -> None:
    """Read Agent Skills as hosts do, with the output of skills-ref (read-properties, to-prompt)."""


@skill_md.command(name="new")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--description", help="What the skill does and when to use it (one line).")
def new_skill(directory: Path, description: str | None) -> None:
    """Create a plain Agent Skill in DIRECTORY (its name): a SKILL.md that passes validate --strict.

    \b
    Example:
      agentpack skill-md new my-skill
    """
    from agentpack.skills.scaffold import new_skill as write

    click.echo(f"created {write(directory, description)}")
    click.echo(f"next: agentpack validate {directory} --strict")
    click.echo(f"      agentpack skill-md to-prompt {directory}")


def _local_or_served(ctx: click.Context, param: click.Parameter, value: str) -> Path | str:
    """``mcp:LABEL:URI`` as given; anything else a path that must exist (click's own check and message)."""
    if value.startswith("mcp:"):
        return value
    converted: Path = click.Path(exists=True, path_type=Path).convert(value, param, ctx)
    return converted


@skill_md.command(name="read-properties")
@click.argument("path", callback=_local_or_served)
@mcp_option()
@output_option(default="skills-ref", choices=("skills-ref", "json"), command="skill-md read-properties")
def read_properties(path: Path | str, mcp: list[Any], output: str) -> None:
    """Print a skill's frontmatter properties as JSON (PATH: the skill folder or its SKILL.md, or
    mcp:LABEL:URI, the SKILL.md a --mcp server serves at URI, listed or not).

    The default output is skills-ref's, byte for byte; -o json wraps the
    properties in agentpack's envelope. A served skill's SKILL.md is read and
    verified against its entry (skills/get); its allowed-tools is left out.

    \b
    Examples:
      agentpack skill-md read-properties skills/pdf-tools
      agentpack skill-md read-properties skills/pdf-tools/SKILL.md --json
      agentpack skill-md read-properties mcp:docs:skill://pdf-tools/SKILL.md --mcp docs=https://example.org/mcp
    """
    from agentpack.skills.skillmd import find_skill_md, read_skill
    from agentpack.skills.skillprompt import properties, properties_json, skill_directory

    if isinstance(path, str):
        from agentpack.mcp.skillviews import served_properties

        with _mcp_sources(mcp, ()) as sources:
            props = served_properties(sources, path)
    else:
        directory = skill_directory(path)
        props = properties(read_skill(directory, display=str(find_skill_md(directory) or directory)))
    if output == "json":
        emit_json("skill-md read-properties", True, path=str(path), properties=props)
    else:
        click.echo(properties_json(props))


@skill_md.command(name="to-prompt")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@mcp_option()
@output_option(default="skills-ref", choices=("skills-ref", "json"), command="skill-md to-prompt")
def to_prompt(paths: tuple[Path, ...], mcp: list[Any], output: str) -> None:
    """Print the <available_skills> block a host puts in its system prompt (PATHS: skill folders or
    their SKILL.md files).

    The default output is skills-ref's, byte for byte; -o json gives the
    block and each skill's name, description, location and origin in agentpack's
    envelope. With --mcp, the skills each server lists follow the local ones, their
    location tagged with the server (mcp:LABEL:URI); nothing is fetched but the listing.

    \b
    Examples:
      agentpack skill-md to-prompt skills/pdf-tools skills/merge-pr
      agentpack skill-md to-prompt skills/*/ --json
      agentpack skill-md to-prompt skills/*/ --mcp docs=https://example.org/mcp
    """
    from agentpack.skills.skillprompt import prompt_entries
    from agentpack.skills.skillprompt import to_prompt as render

    if not paths and not mcp:
        raise click.UsageError("name a skill PATH or a server with --mcp")
    entries: list[dict[str, str]] = prompt_entries(list(paths))
    if mcp:
        from agentpack.mcp.skillviews import prompt_entries as with_remote

        with _mcp_sources(mcp, paths) as sources:
            entries, notes = with_remote(entries, sources)
        for note in notes:
            click.echo(f"warning: {note}", err=True)
    if output == "json":
        emit_json("skill-md to-prompt", True, skills=entries, prompt=render(entries))
    else:
        click.echo(render(entries))


def _mcp_sources(specs: list[Any], local: tuple[Path, ...], walked: tuple[str, ...] | None = None) -> Any:
    """The open skill sources of ``specs``; the cache must lie outside the ``local`` folders the command scans
    and the hidden skill roots (``walked``, the hosts' by default) a walk enters."""
    from agentpack.kernel.packwalk import Walk
    from agentpack.mcp.skillcache import SkillCache
    from agentpack.mcp.skillsource import open_sources

    cache = SkillCache()
    cache.refuse_inside(list(local), Walk().roots if walked is None else walked)
    return open_sources(specs, cache=cache)


@cli.group()
def mcp() -> None:
    """Serve the tools plugins register, and the packs' Agent Skills, over the Model Context Protocol."""


@mcp.command()
@click.option("--transport", type=click.Choice(["stdio", "streamable-http"]), default="stdio", show_default=True)
@click.option("--host", "bind_host", default="127.0.0.1", show_default=True, help="Address for streamable-http.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port for streamable-http.")
@click.option(
    "--pack",
    "packs",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A pack whose tools, skills, resources and prompts to serve (repeatable).",
)
@pairs_option(
    help_text="Options passed to plugins and the server (KEY=VALUE, repeatable; mcp.page_size, mcp.watch_seconds)."
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="streamable-http: require 'Authorization: Bearer TOKEN', TOKEN read from this file "
    "(or set AGENTPACK_MCP_TOKEN).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="streamable-http: serve from this many processes (above 1, each request stands alone: no sessions).",
)
@record_options()
def serve(
    transport: str,
    bind_host: str,
    port: int,
    packs: tuple[Path, ...],
    options: dict[str, str],
    token_file: Path | None,
    workers: int,
    recording: Recording,
) -> None:
    """Serve the MCP tools of the plugins that own the packs (every plugin's without --pack), and
    every Agent Skill under the packs through the MCP Skills extension (see docs/mcp.md).

    Over streamable-http the server checks Origin and Host (DNS rebinding), and with a
    token (--token-file or AGENTPACK_MCP_TOKEN) every request must carry it as a bearer token;
    an address other than loopback is refused without one.
    Tools that evaluate (expert_run_evals, expert_refresh, experts_dry_run) record their runs
    as their CLI twins do: --store, --no-record and --tag apply to every call.

    \b
    Examples:
      agentpack mcp serve --pack expert-skill
      agentpack mcp serve --transport streamable-http --port 8765 --pack expert-skill
      agentpack mcp serve --transport streamable-http --workers 2 --pack expert-skill
    """
    from agentpack.io.errors import AgentpackError, reading
    from agentpack.kernel.registry import McpContext
    from agentpack.mcp.server import serve as run_server

    token = os.environ.get("AGENTPACK_MCP_TOKEN") or None
    if token_file is not None:
        with reading(str(token_file), AgentpackError):
            token = token_file.read_text(encoding="utf-8").strip()
        if not token:
            raise AgentpackError(f"{token_file}: the token file is empty")
    if workers > 1 and transport != "streamable-http":
        raise AgentpackError("--workers applies to --transport streamable-http only")
    context = McpContext(packs=list(packs), options=dict(options), recording=recording)
    code = run_server(
        host(), context, transport=transport, host_name=bind_host, port=port, token=token, workers=workers
    )
    if code:
        raise SystemExit(code)


@mcp.command(name="tools")
@click.option("--pack", "packs", multiple=True, type=click.Path(exists=True, path_type=Path))
@output_option(choices=("text", "json"), command="mcp tools")
def mcp_tools(packs: tuple[Path, ...], output: str) -> None:
    """List the MCP tools that ``mcp serve`` would offer, by the names it lists (and their former names).

    \b
    Example:
      agentpack mcp tools --pack expert-skill --json
    """
    from agentpack.kernel.registry import McpContext
    from agentpack.mcp.tools import served_tools

    tools, _ = served_tools(host(), McpContext(packs=list(packs)))
    if output == "json":
        print_json(
            [
                {
                    "name": t.name,
                    "aliases": list(t.aliases),
                    "description": t.description,
                    "plugin": t.plugin,
                    "input_schema": t.input_schema,
                    "output_schema": t.output_schema,
                }
                for t in tools.values()
            ]
        )
        return
    for tool in tools.values():
        former = f"  (formerly {', '.join(tool.aliases)})" if tool.aliases else ""
        click.echo(f"{tool.name}  ({tool.plugin})  {tool.description}{former}")


@mcp.command(name="check")
@click.argument("server")
@click.option("--label", default="server", show_default=True, help="How the report names the server (mcp:LABEL).")
@report_option()
@output_option(command="mcp check")
def mcp_check(server: str, label: str, report_file: Path | None, output: str) -> None:
    """Check an MCP server against the server rules of the Skills extension (SEP-2640); exit 1 on any error.

    SERVER is a Streamable HTTP URL or a command line started over stdio. Every
    listed skill is fetched and its digests, sizes and frontmatter compared.

    \b
    Examples:
      agentpack mcp check "agentpack mcp serve --pack skills/"
      agentpack mcp check http://127.0.0.1:8765/mcp -o sarif > skills-server.sarif
    """
    from agentpack.io.clock import SYSTEM_CLOCK
    from agentpack.kernel.models import Report, ValidationItem
    from agentpack.mcp.check import check_server
    from agentpack.mcp.client import parse_server

    spec = parse_server(f"{label}={server}")
    findings = check_server(spec)
    item = ValidationItem(path=f"{spec.origin} ({server})", format="mcp-skills-server", findings=findings)
    report = Report(command="mcp check", generated_at=SYSTEM_CLOCK.now(), items=[item])
    emit_report(report, output, report_file)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEMS)


cli.add_command(runs)
cli.add_command(init)
cli.add_command(schema)
cli.add_command(view)


# -- entry point --------------------------------------------------------------------------------
def _blame(exc: BaseException) -> str | None:
    tb = exc.__traceback__
    culprit = None
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.startswith("agentpack_") or module.startswith("agentpack."):
            culprit = module.split(".")[0]
        tb = tb.tb_next
    return culprit


def _json_error(exc: Exception) -> None:
    """With ``-o json``, an error is also the JSON envelope on stdout, so a script reading it sees why."""
    from agentpack.cli.clikit import json_error_command

    command = json_error_command()
    if command is None:
        return
    error = {"message": getattr(exc, "message", str(exc))}
    for field in ("file", "line", "column", "hint"):
        if getattr(exc, field, None) is not None:
            error[field] = getattr(exc, field)
    emit_json(command, False, error=error)


def _json_usage_error(exc: click.ClickException, argv: list[str]) -> None:
    """A usage error found before the command ran (an unknown option, a bad value), as the JSON envelope on stdout
    too when the command line asked for JSON: a script reading stdout sees why, not nothing."""
    import itertools

    asks_json = "--json" in argv or "--output=json" in argv or "-ojson" in argv
    asks_json = asks_json or any(a in ("-o", "--output") and b == "json" for a, b in itertools.pairwise(argv))
    if not asks_json:
        return
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path.removeprefix("agentpack ").removeprefix("agentpack") if ctx else ""
    emit_json(command or "agentpack", False, error={"message": exc.format_message(), "hint": "see --help"})


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and map outcomes to exit codes (never a traceback for a user mistake); what it prints
    shows control characters escaped (``console.guarded_output``)."""
    from agentpack.io.console import guarded_output

    with guarded_output():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    from agentpack.cli.clikit import _json_command
    from agentpack.io.errors import AgentpackError

    _json_command.clear()
    from agentpack.kernel.plugins import current_host

    built = current_host()
    if built is not None:  # one parse per file per command, also for in-process callers
        built.new_command()
    try:
        result = cli.main(args=argv, prog_name="agentpack", standalone_mode=False)
        return result if isinstance(result, int) else EXIT_OK
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
            click.echo("interrupted", err=True)
            return EXIT_INTERRUPTED
        click.echo("aborted", err=True)
        return EXIT_USAGE
    except click.ClickException as exc:
        exc.show()
        _json_usage_error(exc, sys.argv[1:] if argv is None else argv)
        return EXIT_USAGE
    except AgentpackError as exc:
        click.echo(f"error: {exc}", err=True)
        _json_error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # the system refused (permission, no space, a read-only folder): I/O, not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"error: {where}{exc.strerror or exc}", err=True)
        _json_error(AgentpackError(exc.strerror or str(exc), file=None if exc.filename is None else str(exc.filename)))
        _debug_traceback()
        return EXIT_USAGE
    except Exception as exc:
        culprit = _blame(exc)
        where = f" in {culprit}" if culprit and culprit != "agentpack" else ""
        click.echo(f"internal error{where}: {exc!r}", err=True)
        if not _debug_traceback():
            click.echo("  (set AGENTPACK_DEBUG=1 for the traceback; please report it)", err=True)
        return EXIT_INTERNAL


def _debug_traceback() -> bool:
    """With ``AGENTPACK_DEBUG=1``, the traceback of the exception being handled on stderr."""
    if not os.environ.get("AGENTPACK_DEBUG"):
        return False
    import traceback

    traceback.print_exc()
    sys.stderr.flush()
    return True


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
