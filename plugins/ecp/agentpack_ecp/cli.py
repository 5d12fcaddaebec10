"""``agentpack ecp ...`` commands. Build-side commands live here; lifecycle ones in ``lifecycle_cli``."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def ecp() -> None:
    """Build, query, evaluate, refresh and ship Expert Context Packs."""


from . import lifecycle_cli  # noqa: E402  (lifecycle commands attach themselves to the group)

lifecycle_cli.attach(ecp)
