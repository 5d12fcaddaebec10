"""Where the lifecycle keeps its files inside a pack, and a light reader for EXPERT.yaml.

Everything the lifecycle writes lives under ``expert/``:

* ``expert/context/.staging/<run>/``      builds waiting for evals or approval
* ``expert/context/**/.backup/``          previous published indexes (``retention`` applies)
* ``expert/context/.lifecycle/``          lock, publish journal, pending run, state
* ``expert/logs/{updates,queries}/``      dated JSONL logs

None of these are packaged (see ``packaging.DEFAULT_EXCLUDES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.errors import PackError

MANIFEST = "expert/EXPERT.yaml"
PACKAGE_JSON = "expert/package.json"
CONTEXT = "expert/context"
STAGING = "expert/context/.staging"
LIFECYCLE = "expert/context/.lifecycle"
LOGS = "expert/logs"
BACKUP_DIR = ".backup"


def lifecycle_dir(root: Path) -> Path:
    return Path(root) / LIFECYCLE


def lock_path(root: Path) -> Path:
    return lifecycle_dir(root) / "lock"


def journal_path(root: Path) -> Path:
    return lifecycle_dir(root) / "journal.json"


def pending_path(root: Path) -> Path:
    return lifecycle_dir(root) / "pending.json"


def state_path(root: Path) -> Path:
    return lifecycle_dir(root) / "state.json"


def staging_root(root: Path) -> Path:
    return Path(root) / STAGING


def backup_root(index_dir: Path) -> Path:
    """Backups of an index live beside it: ``<parent>/.backup/<index dir name>/<stamp>/``."""
    return index_dir.parent / BACKUP_DIR / index_dir.name


def read_manifest(root: Path) -> Any:
    """``expert/EXPERT.yaml`` as a ``YamlDocument`` (located errors for unreadable YAML)."""
    from agentpack.yamlio import load_yaml

    path = Path(root) / MANIFEST
    if not path.is_file():
        raise PackError(f"{MANIFEST} not found: {root} is not an Expert Context Pack", file=str(path))
    doc = load_yaml(path, display=str(path))
    if not isinstance(doc.data, dict):
        raise PackError("EXPERT.yaml must be a mapping", file=str(path), line=1)
    return doc


def security(manifest: dict[str, Any]) -> dict[str, Any]:
    value = manifest.get("security")
    return value if isinstance(value, dict) else {}


def contains_secrets(manifest: dict[str, Any]) -> bool:
    return security(manifest).get("contains_secrets") is True


_STORE = None


def schema_store():
    """The plugin's bundled JSON Schemas (loaded once per process)."""
    global _STORE
    if _STORE is None:
        from agentpack.schemas import SchemaStore

        _STORE = SchemaStore.from_package("agentpack_ecp", "schemas")
    return _STORE


def schema_findings(schema_id: str, instance: Any, **where: Any) -> list:
    """``schema_store().validate(...)``, answered without ``jsonschema`` when the core's quick check
    proves ``instance`` valid (the common case on run paths); located findings still come from
    ``jsonschema`` whenever the instance is, or may be, invalid."""
    from agentpack.quickschema import is_valid

    store = schema_store()
    if is_valid(store.schema(schema_id), instance) is True:
        return []
    return store.validate(schema_id, instance, **where)
