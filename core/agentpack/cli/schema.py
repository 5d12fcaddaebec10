"""``agentpack schema``: list and export the JSON Schemas the installed formats bundle, for editors and CI.

Light at import (click and clikit only).
"""

from __future__ import annotations

from pathlib import Path

import click

from agentpack.cli.clikit import emit_json, group, host, output_option
from agentpack.io.errors import AgentpackError


@group()
def schema() -> None:
    """The JSON Schemas of every installed format (EXPERT.yaml, manifests, skill.yaml, expert.yaml...)."""


@schema.command(name="list")
@output_option(choices=("text", "json"), command="schema list")
def list_(output: str) -> None:
    """List the bundled schemas: name, title and the plugin that ships them.

    \b
    Examples:
      agentpack schema list
      agentpack schema list --json
    """
    found = sorted(host().schemas().values())
    if output == "json":
        emit_json(
            "schema list",
            True,
            schemas=[{"name": s.name, "title": s.title, "plugin": s.plugin, "file": s.path.name} for s in found],
        )
        return
    width = max((len(s.name) for s in found), default=0)
    for s in found:
        click.echo(f"{s.name:{width}}  {s.title}")


@schema.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option(
    "-o",
    "--out",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("schemas"),
    show_default=True,
    help="The folder to write into (NAME's plugin folder below it, the schema's own file name).",
)
@output_option(choices=("text", "json"), flags=("--output-format",), command="schema export")
def export(names: tuple[str, ...], folder: Path, output: str) -> None:
    """Write schemas (default: all) to a folder, as ``FOLDER/<plugin>/<file>``.

    A schema's ``$ref`` to another of its plugin resolves to the file beside it, so an editor can point
    a ``# yaml-language-server: $schema=`` line at the exported file with no network.

    \b
    Examples:
      agentpack schema export -o .schemas
      agentpack schema export ecp/ecp-manifest openexperts/expert -o .schemas
    """
    from agentpack.io.fsutil import SHARED, atomic_write_text

    known = host().schemas()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise AgentpackError(
            f"no schema named {', '.join(repr(n) for n in unknown)}", hint="'agentpack schema list' names them all"
        )
    written = []
    for name in names or sorted(known):
        info = known[name]
        target = folder / name.split("/", 1)[0] / info.path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, info.path.read_text(encoding="utf-8"), mode=SHARED)
        written.append((name, target))
    if output == "json":
        emit_json("schema export", True, schemas=[{"name": n, "file": str(t)} for n, t in written])
        return
    for name, target in written:
        click.echo(f"{name} -> {target}")
