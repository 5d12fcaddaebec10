"""``agentpack ecp init`` and ``build``: a new pack, and its indexes built from its sources.

Implementations are imported when a command runs (``agentpack ecp --help`` imports none of them).
"""

from __future__ import annotations

from pathlib import Path

import click

from agentpack.cli.clikit import emit_json, output_option

from .output import PACK


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", help="Skill name (default: the directory name; they must be equal).")
@click.option("--title", help="Display name of the expert.")
@click.option("--force", is_flag=True, help="Overwrite an existing pack's scaffold files.")
@click.option("--no-build", is_flag=True, help="Do not build the indexes after writing the files.")
@click.option(
    "--source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of your own documents (.md, .txt) to copy in as the pack's source, in place of the sample.",
)
@output_option(choices=("text", "json"), command="ecp init")
def init(
    directory: Path, name: str | None, title: str | None, force: bool, no_build: bool, source: Path | None, output: str
) -> None:
    """Create a new Expert Context Pack in DIRECTORY (profile conformance, one suite) and build its keyword,
    SQLite FTS5 and vector indexes, from a sample document or your own (--source).

    \b
    Examples:
      agentpack ecp init my-expert && agentpack eval my-expert
      agentpack ecp init team-handbook --source ~/handbook
    """
    from agentpack.cli.clikit import host

    from ..index.build import build_pack
    from ..pack.scaffold import scaffold

    scaffold(directory, name=name, title=title, force=force, source=source, schemas=host().schemas())
    result = None if no_build else build_pack(directory)
    if output == "json":
        emit_json("ecp init", True, path=str(directory), build=result.to_json() if result else None)
        return
    click.echo(f"created {directory}")
    if result:
        click.echo(f"built {', '.join(i['index_id'] for i in result.indexes)}")
    click.echo(f"next: agentpack validate {directory} --strict")
    click.echo(f"      agentpack eval {directory} --no-record")
    click.echo(f"      agentpack ecp watch {directory} --max-runs 1 --duration 5")


@click.command()
@click.argument("pack", type=PACK)
@click.option("--rebuild", is_flag=True, help="Rebuild every selected index even when it is up to date.")
@click.option("--index", "index_ids", multiple=True, metavar="ID", help="Build only this index (repeatable).")
@output_option(choices=("text", "json"), command="ecp build")
def build(pack: Path, rebuild: bool, index_ids: tuple[str, ...], output: str) -> None:
    """Build PACK's indexes from its sources (atomic: an interrupted build keeps the previous index).

    \b
    Examples:
      agentpack ecp build examples/ecp/conformance-pack
      agentpack ecp build my-expert --rebuild --index docs-keyword --json
    """
    from ..index.build import build_pack

    result = build_pack(pack, rebuild=rebuild, index_ids=index_ids or None)
    if output == "json":
        emit_json("ecp build", True, **result.to_json())
        return
    for item in result.indexes:
        if item["status"] == "up-to-date":
            click.echo(f"{item['index_id']}: up to date ({item['format']})")
        else:
            click.echo(
                f"{item['index_id']}: built {item['format']}: {item['chunks']} chunks from {item['files']} "
                f"files in {item['duration_s']:.2f} s"
            )
    for sid, revision in result.revisions.items():
        ident = revision.get("commit") or revision.get("hash") or revision.get("query_hash") or ""
        click.echo(f"source {sid}: {str(ident)[:12]}")


COMMANDS = [init, build]
