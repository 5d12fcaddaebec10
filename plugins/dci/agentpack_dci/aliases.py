"""Alias tables: ``canonical -> [aliases]``, three sources in precedence order, cycles flattened at load.

Precedence: runtime/user table, then the workspace's ``.dci/aliases.v1.json``,
then the built-in table. A token is looked up table by table; inside one table
a canonical key wins over an alias entry. Keys that reach each other through
alias entries (a cycle) are flattened to the first of them in document order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import sha256_json
from agentpack.io.userfiles import optional_file

from . import schemas_store
from .artifacts import require_valid

SOURCES = ("runtime-user", "workspace", "builtin")
WORKSPACE_FILE = Path(".dci") / "aliases.v1.json"


class AliasTable(NamedTuple):
    source: str
    version: str
    canonical_of: dict[str, str]
    """Every token of the table (keys and aliases) -> its flattened canonical token."""
    digest: str
    path: str | None = None
    notes: tuple[str, ...] = ()


def flatten(aliases: dict[str, list[str]]) -> tuple[dict[str, str], list[str]]:
    """Map every token to its canonical token; return the map and notes (conflicts, self-aliases)."""
    keys = list(aliases)
    order = {k: n for n, k in enumerate(keys)}
    notes: list[str] = []
    parent: dict[str, str] = {}
    edges: dict[str, list[str]] = {k: [] for k in keys}
    for key in keys:
        for alias in aliases[key]:
            if alias == key:
                notes.append(f"'{key}' lists itself as an alias")
                continue
            if alias in order:
                edges[key].append(alias)
            if alias in parent:
                notes.append(f"alias '{alias}' is listed under '{parent[alias]}' and '{key}'; '{parent[alias]}' wins")
                continue
            parent[alias] = key

    reach: dict[str, set[str]] = {}
    for key in keys:
        seen, stack = set(), [key]
        while stack:
            for nxt in edges[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        reach[key] = seen
    root: dict[str, str] = {}
    for key in keys:
        cycle = [k for k in keys if k == key or (k in reach[key] and key in reach[k])]
        root[key] = min(cycle, key=order.__getitem__) if key in reach[key] else key
    canonical = dict(root)
    for alias, key in parent.items():
        if alias not in canonical:
            canonical[alias] = root[key]
    return canonical, notes


def table_from_data(data: dict[str, Any], source: str, path: str | None = None) -> AliasTable:
    canonical, notes = flatten(data["aliases"])
    return AliasTable(
        source=source,
        version=data["alias_table_version"],
        canonical_of=canonical,
        digest=sha256_json(data["aliases"])[:16],
        path=path,
        notes=tuple(notes),
    )


def load_table(path: Path, source: str, display: str | None = None) -> AliasTable:
    """Load and schema-validate one alias table file; ``AgentpackError`` with file:line when invalid."""
    data = require_valid(path, schemas_store.ALIASES, code="DCI101", what="alias table", display=display)
    return table_from_data(data, source, display or str(path))


def builtin_table() -> AliasTable:
    """The bundled table. It is validated against the alias schema by the tests, not on every run
    (importing jsonschema would cost every ``agentpack dci`` process about 0.1 s)."""
    # beside the module, not through importlib.resources (~4 ms to import and set up per cold process)
    text = (Path(__file__).parent / "data" / "builtin-aliases.v1.json").read_text(encoding="utf-8")
    return table_from_data(json.loads(text), "builtin")


class AliasResolver:
    """Canonical-token lookups over the loaded tables, in precedence order."""

    def __init__(self, tables: list[AliasTable]) -> None:
        self.tables = sorted(tables, key=lambda t: SOURCES.index(t.source))
        self.version_key = "|".join(f"{t.source}:{t.version}@{t.digest}" for t in self.tables)
        self._memo: dict[str, str] = {}

    def canonical(self, token: str) -> str:
        found = self._memo.get(token)
        if found is None:
            found = token
            for table in self.tables:
                if token in table.canonical_of:
                    found = table.canonical_of[token]
                    break
            self._memo[token] = found
        return found

    @property
    def primary(self) -> AliasTable:
        """The table of highest precedence (a resolver always holds the built-in one)."""
        return self.tables[0]

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "source": t.source,
                "alias_table_version": t.version,
                "digest": t.digest,
                **({"path": t.path} if t.path else {}),
            }
            for t in self.tables
        ]


def load_resolver(workspace: Path, user_table: Path | None = None) -> AliasResolver:
    """The runtime/user table (if given), the workspace table (if present) and the built-in table.

    A workspace table that is there but unusable (a folder, a dangling link, invalid) is an error: resolution
    never falls back to the built-in table silently.
    """
    tables = [builtin_table()]
    ws = workspace / WORKSPACE_FILE
    if optional_file(ws, display=WORKSPACE_FILE.as_posix(), error=AgentpackError, expected="a JSON file"):
        tables.append(load_table(ws, "workspace", display=WORKSPACE_FILE.as_posix()))
    if user_table is not None:
        tables.append(load_table(user_table, "runtime-user"))
    return AliasResolver(tables)
