"""What a killed build, refresh or publish can leave behind, found and removed.

* staging runs under ``expert/context/.staging/``, except the one a pending publish
  (``pending.json``) or an unfinished journal still needs;
* ``.staging-<index>-<pid>`` folders beside an index folder (where earlier versions staged a build);
* ``.<index>.old-<pid>-<n>`` folders beside an index folder (an earlier version's swap).

``remove`` runs under the pack lock, after any journal was finished (``journal.recover``): the next
build, refresh or prune leaves none of them; ``validate --strict`` reports those it ``find``s.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from agentpack.io import jsonio

from . import layout
from .files import read_regular

_BESIDE = re.compile(r"^\.staging-.+|^\..+\.old-\d+-\d+$")


def _kept(root: Path) -> set[Path]:
    """Staging folders still needed: the pending run's and the unfinished journal's."""
    kept = set()
    for path, key in ((layout.pending_path(root), "staging"), (layout.journal_path(root), "cleanup")):
        try:
            value = jsonio.loads(read_regular(path)).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, str) and value:
            kept.add((root / value).resolve())
    return kept


def find(root: Path, index_paths: Iterable[str]) -> list[str]:
    """Leftover folders of the pack at ``root`` (paths relative to it, sorted)."""
    root = Path(root)
    kept = _kept(root)
    found: set[Path] = set()
    staging = layout.staging_root(root)
    if staging.is_dir():
        found |= {p for p in staging.iterdir() if p.resolve() not in kept}
    for parent in {(root / rel).parent for rel in index_paths}:
        if parent.is_dir():
            found |= {p for p in parent.iterdir() if _BESIDE.match(p.name) and p.is_dir()}
    return sorted(p.relative_to(root).as_posix() for p in found)


def remove(root: Path, index_paths: Iterable[str]) -> list[str]:
    """Delete the leftovers ``find`` lists (the caller holds the pack lock); returns them."""
    gone = find(root, index_paths)
    for rel in gone:
        path = Path(root) / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return gone
