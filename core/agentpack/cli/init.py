"""``agentpack init``: the scaffolds of every installed format, and one of them run into a folder."""

from __future__ import annotations

from pathlib import Path

import click

from agentpack.cli.clikit import CONTEXT_SETTINGS


@click.command(
    context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("kind", required=False)
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.pass_context
def init(ctx: click.Context, kind: str | None, directory: Path | None) -> None:
    """List the scaffolds of every installed format, or start a new KIND in DIRECTORY.

    Further arguments go to the format's own command (``agentpack init ecp DIR --source DOCS``
    runs ``agentpack ecp init DIR --source DOCS``). Each scaffold prints the next steps to take.

    \b
    Examples:
      agentpack init
      agentpack init skill my-skill
      agentpack init ecp my-pack --source ~/notes
    """
    from agentpack.cli.clikit import host

    scaffolds = host().scaffolds()
    if kind is None:
        rows = [(name, f"agentpack {' '.join(info.command)} DIR", info.description) for name, info in scaffolds.items()]
        width = [max((len(row[i]) for row in rows), default=0) for i in (0, 1)]
        for name, command, description in sorted(rows):
            click.echo(f"{name:<{width[0]}}  {command:<{width[1]}}  {description}".rstrip())
        click.echo("\nStart one with: agentpack init KIND DIR", err=True)
        return
    if kind not in scaffolds:
        import difflib

        from agentpack.kernel.known import KNOWN_PLUGINS, install_hint

        known = next((p for p in KNOWN_PLUGINS if p.scaffold == kind), None)
        if known is not None:
            raise click.UsageError(
                f"scaffold '{kind}' comes with plugin '{known.name}', which is not loaded: {install_hint(known)}"
            )

        close = difflib.get_close_matches(kind, list(scaffolds), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise click.BadParameter(f"no scaffold '{kind}'; {hint}choose from: {', '.join(sorted(scaffolds))}")
    if directory is None:
        raise click.UsageError(f"name the folder to create: agentpack init {kind} DIR")
    root = ctx.find_root()
    words = [*scaffolds[kind].command, str(directory), *ctx.args]
    with root.command.make_context(root.info_name, words, parent=None) as sub:
        root.command.invoke(sub)
