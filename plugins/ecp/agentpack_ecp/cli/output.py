"""What every ECP command does with its result: text, or the versioned JSON envelope on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentpack.cli.clikit import EXIT_PROBLEMS, print_json
from agentpack.io.errors import AgentpackError

PACK = click.Path(path_type=Path)
"""A pack argument. Existence is checked when the command runs (``load_pack``, ``must_exist``), so that
with ``--json`` a missing path is the JSON error envelope like every other error, not usage text."""


def must_exist(path: Path, what: str) -> Path:
    """``path``, or ``AgentpackError`` (exit 2, the JSON envelope under ``--json``) when nothing is there."""
    if not path.exists():
        raise AgentpackError(f"{what} {path} does not exist", file=str(path))
    return path


def emit(payload: dict[str, Any], output: str, text: str) -> None:
    """Print ``payload`` (a ``clikit.envelope``) for ``-o json``, else ``text``; exit 1 when it is not ok."""
    if output == "json":
        print_json(payload)
    elif text:
        click.echo(text)
    if not payload["ok"]:
        raise SystemExit(EXIT_PROBLEMS)
