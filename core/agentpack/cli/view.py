"""``agentpack view``: browse the run store in a local web page. Light at import: starlette loads on start."""

from __future__ import annotations

from pathlib import Path

import click

from agentpack.cli.clikit import CONTEXT_SETTINGS


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The run store (default: $AGENTPACK_RUNS or .agentpack/runs.sqlite in the project).",
)
@click.option("--host", "bind_host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8770, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--open", "open_browser", is_flag=True, help="Also open the page in the default browser.")
def view(store: Path | None, bind_host: str, port: int, open_browser: bool) -> None:
    """Browse recorded runs: list with filters, run pages, compare, trend charts.

    Serves on 127.0.0.1 only (offline, no CDN) and prints its URL; Ctrl-C stops it.

    \b
    Examples:
      agentpack view
      agentpack view --port 0 --store ci-runs.sqlite
    """
    from agentpack.cli.clikit import host
    from agentpack.io import console
    from agentpack.results.runs.store import default_store_path
    from agentpack.results.viewer.server import bind, dependencies, serve, url_of

    dependencies()  # a missing dependency fails before the URL is printed
    path = (store or default_store_path()).resolve()
    sock = bind(bind_host, port)
    url = url_of(sock)
    views = list(host().run_views().values())
    console.logger(__name__).info("serving %s on %s with run views %s", path, url, [v.name for v in views])
    click.echo(f"agentpack view: {url}  (store {path}; Ctrl-C to stop)")
    if not path.is_file():
        click.echo(f"note: no runs recorded yet in {path}; run agentpack eval PATH to record one", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    serve(sock, path, views)
