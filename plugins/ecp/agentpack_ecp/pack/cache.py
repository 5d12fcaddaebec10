"""``PackCache``: ``load_pack`` for a long-running server, the loaded pack again while its files are unchanged.

``expert.query`` over MCP used to re-read EXPERT.yaml, the maintenance policy and the eval suites
on every call (two thirds of the query's own CPU). A pack is re-read when one of the files it was
read from changes (size, modification or change time, inode), appears or goes. As git does for
its index, a file modified within the last two seconds is not trusted to show its next change in
its times (coarse file-system clocks, a write racing the load), so such a pack is not kept.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .layout import MANIFEST_PATH
from .manifest import ExpertPack, load_pack

RACY_SECONDS = 2.0
Stamp = tuple[tuple[int, int, int, int] | None, ...]


class PackCache:
    """Loaded packs by the path they were asked for; safe to share between threads (the packs are read-only)."""

    def __init__(self) -> None:
        self._packs: dict[Path, tuple[Stamp, ExpertPack]] = {}

    def load(self, root: Path) -> ExpertPack:
        held = self._packs.get(root)
        if held is not None and _stamp(held[1]) == held[0]:
            return held[1]
        pack = load_pack(root)
        stamp = _stamp(pack)
        now = time.time_ns()
        if all(s is None or now - s[0] > RACY_SECONDS * 1e9 for s in stamp):  # by modification time
            self._packs[root] = (stamp, pack)
        else:
            self._packs.pop(root, None)
        return pack


def _stamp(pack: ExpertPack) -> Stamp:
    """(mtime, ctime, size, inode) of each file ``pack`` was read from (``None``: absent or unreadable)."""
    stamps: list[tuple[int, int, int, int] | None] = []
    for rel in (MANIFEST_PATH, pack.policy_path, *(s.path for s in pack.suites)):
        try:
            st = os.stat(pack.root / rel) if rel else None
        except (OSError, ValueError):
            st = None
        stamps.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) if st else None)
    return tuple(stamps)
