"""Loading an Expert Context Pack: EXPERT.yaml, policy.json and eval suites, each parsed once.

* ``load_pack(root) -> ExpertPack``: reads everything a pack declares without
  judging it. Raises ``PackError`` (file and line) only when ``expert/EXPERT.yaml``
  is missing or is not YAML; every other problem (bad policy JSON, missing
  suite) is kept on the ``ExpertPack`` for validation.
* ``ExpertPack``: ``root``, ``manifest_doc`` (``YamlDocument``: data plus lines),
  ``manifest`` (the data), typed views ``sources``, ``indexes``, ``summaries``,
  ``snapshots``, ``suites`` (``SuiteRef`` with their loaded documents),
  ``policy``/``policy_doc``, ``skill`` (SKILL.md, parsed when first asked for).
  The object the ``agentpack_load`` hook returns; query, evals and validation
  receive it rather than a path.

Typed views are tolerant: a malformed entry becomes a view with empty fields,
so a half-written pack can still be validated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError, PackError
from agentpack.io.paths import check_inside, resolve_under
from agentpack.io.yamlio import YamlDocument

from .files import read_json_doc, read_yaml_doc
from .layout import MANIFEST_PATH, find_pack_root, has_manifest

if TYPE_CHECKING:
    from agentpack.skills.skillmd import Skill


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else ``{}`` (for tolerant reads of YAML and JSON documents)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass
class Source:
    index: int
    raw: dict

    @property
    def pointer(self) -> str:
        return f"/sources/{self.index}"

    @property
    def source_id(self) -> str:
        return as_str(self.raw.get("source_id"))

    @property
    def type(self) -> str:
        return as_str(self.raw.get("type"))

    @property
    def uri(self) -> str:
        return as_str(self.raw.get("uri"))

    @property
    def include(self) -> list[str]:
        return [p for p in as_list(as_dict(self.raw.get("scope")).get("include")) if isinstance(p, str)]

    @property
    def exclude(self) -> list[str]:
        return [p for p in as_list(as_dict(self.raw.get("scope")).get("exclude")) if isinstance(p, str)]

    @property
    def revision(self) -> dict:
        return as_dict(self.raw.get("revision"))

    @property
    def refresh(self) -> dict:
        return as_dict(self.raw.get("refresh"))

    @property
    def classification(self) -> str | None:
        return self.raw.get("classification") if isinstance(self.raw.get("classification"), str) else None

    @property
    def license(self) -> str | None:
        return self.raw.get("license") if isinstance(self.raw.get("license"), str) else None

    @property
    def query(self) -> str | None:
        """The extraction query of a database source (``query`` or ``refresh.rebuild.query``)."""
        for holder in (self.raw, as_dict(self.refresh.get("rebuild")), as_dict(self.refresh.get("incremental"))):
            if isinstance(holder.get("query"), str) and holder["query"].strip():
                return holder["query"]
        return None


@dataclass
class IndexEntry:
    index: int
    raw: dict

    @property
    def pointer(self) -> str:
        return f"/context/artifacts/indexes/{self.index}"

    @property
    def id(self) -> str:
        return as_str(self.raw.get("id"))

    @property
    def type(self) -> str:
        return as_str(self.raw.get("type"))

    @property
    def path(self) -> str:
        return as_str(self.raw.get("path"))

    @property
    def descriptor(self) -> str:
        return as_str(self.raw.get("descriptor"))

    @property
    def format(self) -> str | None:
        """The payload format this entry asks for (``None`` for unsupported types)."""
        explicit = self.raw.get("format")
        if isinstance(explicit, str):
            return explicit
        backend = as_str(self.raw.get("backend") or self.raw.get("implementation")).lower()
        if self.type == "vector" or backend == "vector":
            return "vector-index-v1"
        if self.type == "keyword":
            return "sqlite-fts-index-v1" if backend in ("sqlite-fts", "sqlite", "fts5") else "keyword-index-v2"
        return None

    @property
    def chunking(self) -> dict:
        return as_dict(self.raw.get("chunking"))

    @property
    def embedding(self) -> dict:
        return as_dict(self.raw.get("embedding"))

    @property
    def vector(self) -> dict:
        return as_dict(self.raw.get("vector"))


@dataclass
class Summary:
    index: int
    raw: dict

    @property
    def id(self) -> str:
        return as_str(self.raw.get("id"))

    @property
    def type(self) -> str:
        return as_str(self.raw.get("type"))

    @property
    def path(self) -> str:
        return as_str(self.raw.get("path"))


@dataclass
class Snapshot:
    index: int
    raw: dict

    @property
    def path(self) -> str:
        return as_str(self.raw.get("path"))

    @property
    def format(self) -> str:
        return as_str(self.raw.get("format"), "directory")

    @property
    def source_id(self) -> str:
        return as_str(as_dict(self.raw.get("as_of")).get("source_id"))


@dataclass
class SuiteRef:
    """An ``evals.suites[]`` entry and its loaded YAML (``doc`` is ``None`` when unreadable)."""

    index: int
    suite_id: str
    path: str
    doc: YamlDocument | None = None
    error: AgentpackError | None = None

    @property
    def data(self) -> dict:
        return as_dict(self.doc.data) if self.doc is not None else {}

    @property
    def cases(self) -> list[dict]:
        return [c for c in as_list(self.data.get("cases")) if isinstance(c, dict)]


@dataclass
class ExpertPack:
    root: Path
    manifest_doc: YamlDocument
    policy_doc: YamlDocument | None = None
    policy_error: AgentpackError | None = None
    suites: list[SuiteRef] = field(default_factory=list)

    @property
    def manifest(self) -> dict:
        return as_dict(self.manifest_doc.data)

    @property
    def manifest_file(self) -> str:
        return MANIFEST_PATH

    def where(self, pointer: str) -> dict[str, Any]:
        """``file``, ``line``, ``column`` and ``pointer`` of a field of EXPERT.yaml, for findings."""
        return self.manifest_doc.where(pointer)

    @cached_property
    def skill(self) -> Skill | None:
        """The parsed SKILL.md (``None`` when it cannot be read: the core's SKL checks report why)."""
        from agentpack.skills.skillmd import read_skill  # a query never reads SKILL.md

        try:
            return read_skill(self.root)
        except AgentpackError:
            return None

    @property
    def name(self) -> str:
        return as_str(as_dict(self.manifest.get("skill")).get("name")) or self.root.name

    @property
    def expert_id(self) -> str:
        return as_str(self.manifest.get("id"))

    @property
    def profile(self) -> str | None:
        value = self.manifest.get("profile")
        return value if isinstance(value, str) else None

    @property
    def security(self) -> dict:
        return security(self.manifest)

    @property
    def artifacts(self) -> dict:
        return as_dict(as_dict(self.manifest.get("context")).get("artifacts"))

    @property
    def sources(self) -> list[Source]:
        return [Source(i, s) for i, s in enumerate(as_list(self.manifest.get("sources"))) if isinstance(s, dict)]

    def source(self, source_id: str) -> Source | None:
        return next((s for s in self.sources if s.source_id == source_id), None)

    @property
    def indexes(self) -> list[IndexEntry]:
        return [IndexEntry(i, e) for i, e in enumerate(as_list(self.artifacts.get("indexes"))) if isinstance(e, dict)]

    @property
    def summaries(self) -> list[Summary]:
        return [Summary(i, e) for i, e in enumerate(as_list(self.artifacts.get("summaries"))) if isinstance(e, dict)]

    @property
    def snapshots(self) -> list[Snapshot]:
        return [Snapshot(i, e) for i, e in enumerate(as_list(self.artifacts.get("snapshots"))) if isinstance(e, dict)]

    @property
    def policy(self) -> dict:
        return as_dict(self.policy_doc.data) if self.policy_doc is not None else {}

    @property
    def policy_path(self) -> str:
        return as_str(as_dict(self.manifest.get("maintenance")).get("policy_path"))

    def suite(self, suite_id: str) -> SuiteRef | None:
        return next((s for s in self.suites if s.suite_id == suite_id), None)


def _present(root: Path, rel: str) -> bool:
    """Whether ``rel`` is a safe pack path with something at it (a file, a folder, even a broken link):
    a missing file is left to validation (ECP111), anything else is read and its problem recorded."""
    try:
        resolve_under(root, rel)
    except AgentpackError:
        return False
    return os.path.lexists(root / rel)


def load_pack(root: str | Path) -> ExpertPack:
    """Load the pack at ``root`` (a skill directory, its SKILL.md or its expert/EXPERT.yaml)."""
    given = Path(root)
    if not given.exists():
        raise PackError(f"{given} does not exist", file=str(given))
    found = find_pack_root(given)
    if found is None:
        base = given.parent if given.is_file() else given
        if not has_manifest(base):
            raise PackError(
                f"{MANIFEST_PATH} not found",
                file=str(base / MANIFEST_PATH),
                hint="an Expert Context Pack is a skill directory with SKILL.md and expert/EXPERT.yaml",
            )
        found = base
    root_path = found.resolve()
    check_inside(root_path, root_path / MANIFEST_PATH, display=MANIFEST_PATH, error=PackError)
    doc = read_yaml_doc(root_path / MANIFEST_PATH, MANIFEST_PATH)
    if not isinstance(doc.data, dict):
        raise PackError("EXPERT.yaml must be a YAML mapping", file=MANIFEST_PATH, line=1)
    pack = ExpertPack(root=root_path, manifest_doc=doc)
    if pack.policy_path and _present(root_path, pack.policy_path):
        try:
            pack.policy_doc = read_json_doc(root_path / pack.policy_path, pack.policy_path)
        except AgentpackError as exc:
            pack.policy_error = exc
    suites = as_list(as_dict(pack.manifest.get("evals")).get("suites"))
    for i, entry in enumerate(suites):
        if not isinstance(entry, dict):
            continue
        ref = SuiteRef(i, as_str(entry.get("suite_id")), as_str(entry.get("path")))
        if ref.path and _present(root_path, ref.path):
            try:
                ref.doc = read_yaml_doc(root_path / ref.path, ref.path)
            except AgentpackError as exc:
                ref.error = exc
        pack.suites.append(ref)
    return pack


def security(manifest: dict[str, Any]) -> dict[str, Any]:
    value = manifest.get("security")
    return value if isinstance(value, dict) else {}


def contains_secrets(manifest: dict[str, Any]) -> bool:
    return security(manifest).get("contains_secrets") is True
