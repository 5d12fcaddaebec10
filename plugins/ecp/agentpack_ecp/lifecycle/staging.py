"""Staged builds: ``expert/context/.staging/<run>/``, where a refresh builds before its evals.

``staged_pack(pack, staging)`` is the loaded pack as the evals of a staged
build see it: every index entry points at its staged copy
(``<staging>/<entry path>``, where ``build_pack(out_dir=...)`` wrote it), while
sources, suites and summaries stay the pack's. Query and evals receive that
object (with an index cache of their own), so other callers, such as other
threads of an MCP server, keep being served the published indexes.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import PurePosixPath

from agentpack.io.yamlio import YamlDocument

from ..pack.manifest import ExpertPack


def staged_pack(pack: ExpertPack, staging: str) -> ExpertPack:
    """``pack`` with every index entry's ``path`` and ``descriptor`` moved under ``staging``
    (relative to the pack root, POSIX); nothing is read again."""
    prefix = staging.rstrip("/")
    data = copy.deepcopy(pack.manifest_doc.data)
    indexes = ((data.get("context") or {}).get("artifacts") or {}).get("indexes")
    for entry in indexes if isinstance(indexes, list) else []:
        if not isinstance(entry, dict):
            continue
        for key in ("path", "descriptor"):
            if isinstance(entry.get(key), str) and entry[key]:
                entry[key] = f"{prefix}/{PurePosixPath(entry[key]).as_posix()}"
    doc = pack.manifest_doc
    staged_doc = YamlDocument(data, file=doc.file, lines=doc.lines, columns=doc.columns, merged=doc.merged)
    return dataclasses.replace(pack, manifest_doc=staged_doc)
