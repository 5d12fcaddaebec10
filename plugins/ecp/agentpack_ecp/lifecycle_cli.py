"""Lifecycle commands (refresh, publish, rollback, watch, prune, package, verify, sign)."""

from __future__ import annotations

import click


def attach(group: click.Group) -> None:
    """Add the lifecycle commands to the ``ecp`` group."""
