"""The environment variables skillctl reads.

Each is ``AGENTPACK_SKILLCTL_<NAME>``; the reference runner's ``SKILLCTL_<NAME>``
stays a documented alias, read when the first is not set (docs/skillctl.md).
An empty value counts as not set.
"""

from __future__ import annotations

import os

ROOT = ("AGENTPACK_SKILLCTL_ROOT", "SKILLCTL_ROOT")
"""The library root (a ``skills/`` tree, or a folder holding one)."""
CACHE_DIR = ("AGENTPACK_SKILLCTL_CACHE_DIR", "SKILLCTL_CACHE_DIR")
"""The cache folder (outputs, prepared skills, content hashes, the id index)."""
PREPARED_CACHE = ("AGENTPACK_SKILLCTL_PREPARED_CACHE", "SKILLCTL_PREPARED_CACHE")
"""``off`` turns the prepared-skill cache off."""


def lookup(names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` that is set (and not empty)."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None
