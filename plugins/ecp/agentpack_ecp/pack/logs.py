"""Update and query logs (spec section 9): dated JSONL under ``expert/logs/``, hashed by default.

Questions and answers are stored as SHA-256 only, unless ``logs.store_question``
/ ``logs.store_answer`` is true AND the pack does not declare
``security.contains_secrets: true``. No caller option can override this: the
decision is made here, from the manifest alone.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.hashing import sha256_text

from .layout import LOGS
from .manifest import as_dict, as_str, contains_secrets, security

KINDS = ("updates", "queries")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl$")


@dataclass(frozen=True)
class LogConfig:
    enabled: bool = False
    store_question: bool = False
    store_answer: bool = False
    retention_days: int | None = None

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any], policy: dict[str, Any] | None = None) -> LogConfig:
        logs = as_dict(manifest.get("logs"))
        secrets = contains_secrets(manifest)
        return cls(
            enabled=logs.get("enabled") is True,
            store_question=logs.get("store_question") is True and not secrets,
            store_answer=logs.get("store_answer") is True and not secrets,
            retention_days=retention_days(manifest, policy),
        )


def retention_days(manifest: dict[str, Any], policy: dict[str, Any] | None = None) -> int | None:
    """The shortest of ``logs.retention_days``, ``policy.retention.prune_logs_after_days`` and
    ``security.retention_days``: each is a promise not to keep data longer, so all of them hold."""
    logs = as_dict(manifest.get("logs"))
    retention = as_dict((policy or {}).get("retention"))
    values = [
        logs.get("retention_days"),
        retention.get("prune_logs_after_days"),
        security(manifest).get("retention_days"),
    ]
    days = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return min(days) if days else None


def actor(default: str = "user") -> str:
    """``AGENTPACK_ECP_ACTOR`` (alias ``AGENTPACK_ACTOR``) when set, else ``user:<login>`` (or
    ``service:<name>`` for servers)."""
    explicit = os.environ.get("AGENTPACK_ECP_ACTOR") or os.environ.get("AGENTPACK_ACTOR")
    if explicit:
        return explicit
    if default.startswith("service:"):
        return default
    return f"user:{os.environ.get('USER') or os.environ.get('USERNAME') or 'unknown'}"


class PackLogger:
    """Appends records to ``expert/logs/<kind>/YYYY-MM-DD.jsonl`` (UTC dates) when logging is enabled."""

    def __init__(self, root: Path, config: LogConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.root = Path(root)
        self.config = config
        self.clock = clock

    def _write(self, kind: str, record: dict[str, Any]) -> Path | None:
        if not self.config.enabled:
            return None
        now = self.clock.now()
        record = {"timestamp": self.clock.iso(), **record}
        path = self.root / LOGS / kind / f"{now.strftime('%Y-%m-%d')}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record, ensure_ascii=False, sort_keys=True, default=str) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, line)  # one write of a whole line: concurrent writers never interleave
        finally:
            os.close(fd)
        return path

    def query(
        self,
        question: str,
        response: dict[str, Any],
        *,
        request: dict[str, Any] | None = None,
        who: str = "user",
        duration_ms: float | None = None,
    ) -> Path | None:
        answer = as_str(response.get("answer"))
        inputs: dict[str, Any] = {"question_sha256": sha256_text(question), **(request or {})}
        if self.config.store_question:
            inputs["question"] = question
        citations = [c for c in response.get("citations") or [] if isinstance(c, dict)]
        outputs: dict[str, Any] = {
            "answer_sha256": sha256_text(answer),
            "citations": [c.get("chunk_id") or c.get("artifact_path") for c in citations],
            "synthesis": (response.get("synthesis") or {}).get("provider")
            if isinstance(response.get("synthesis"), dict)
            else None,
        }
        if self.config.store_answer:
            outputs["answer"] = answer
        record: dict[str, Any] = {"actor": actor(who), "operation": "query", "inputs": inputs, "outputs": outputs}
        if duration_ms is not None:
            record["duration_ms"] = round(duration_ms, 3)
        return self._write("queries", record)

    def update(self, operation: str, *, who: str = "user", **fields: Any) -> Path | None:
        return self._write("updates", {"actor": actor(who), "operation": operation, **fields})


def logger_for(
    root: Path, manifest: dict[str, Any], policy: dict[str, Any] | None = None, *, clock: Clock = SYSTEM_CLOCK
) -> PackLogger:
    return PackLogger(root, LogConfig.from_manifest(manifest, policy), clock=clock)


def prune_logs(root: Path, days: int | None, *, now: datetime, dry_run: bool = False) -> list[str]:
    """Delete dated log files older than ``days`` days (by the date in their name); returns them."""
    if days is None:
        return []
    cutoff = (now - timedelta(days=days)).date()
    removed = []
    for kind in KINDS:
        folder = Path(root) / LOGS / kind
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            match = _DATED.match(path.name)
            if not match or not path.is_file() or path.is_symlink():
                continue
            try:
                day = datetime.strptime(match.group(1), "%Y-%m-%d").date()
            except ValueError:
                continue
            if day < cutoff:
                if not dry_run:
                    path.unlink()
                removed.append(path.relative_to(root).as_posix())
    return removed
