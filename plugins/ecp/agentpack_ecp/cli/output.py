"""What every ECP command does with its result: text, or the versioned JSON envelope on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentpack.clikit import EXIT_PROBLEMS, print_json

PACK = click.Path(exists=True, file_okay=False, path_type=Path)
"""A pack directory argument."""


def emit(payload: dict[str, Any], output: str, text: str) -> None:
    """Print ``payload`` (a ``clikit.envelope``) for ``-o json``, else ``text``; exit 1 when it is not ok."""
    if output == "json":
        print_json(payload)
    elif text:
        click.echo(text)
    if not payload["ok"]:
        raise SystemExit(EXIT_PROBLEMS)
