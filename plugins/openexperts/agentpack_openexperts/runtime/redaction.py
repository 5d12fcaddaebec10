"""Redaction of ``private`` knowledge from everything the runtime writes: the run store, the outbox,
state and scratch files, and the runtime's log records."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from ..model import ExpertPackage

REDACTED = "[private knowledge redacted]"
MIN_FRAGMENT = 12


class Redactor:
    """Replaces any line of a ``private`` knowledge file (12+ characters) in logs, reports and messages:
    in strings, and in the keys and values of mappings at any depth."""

    def __init__(self, package: ExpertPackage) -> None:
        fragments = set()
        for component in package.of("knowledge"):
            if package.knowledge_type(component) == "private":
                for line in component.body.splitlines():
                    line = line.strip().lstrip("#-*> ").strip()
                    if len(line) >= MIN_FRAGMENT:
                        fragments.add(line)
        self.fragments = sorted(fragments, key=len, reverse=True)

    def __call__(self, value: Any) -> Any:
        if not self.fragments:
            return value
        if isinstance(value, str):
            for fragment in self.fragments:
                if fragment in value:
                    value = value.replace(fragment, REDACTED)
            return value
        if isinstance(value, dict):  # keys too: a private line used as a key is as visible as a value
            out: dict[Any, Any] = {}
            for key, item in value.items():
                key = self(key) if isinstance(key, str) else key
                unique, n = key, 1
                while unique in out:  # two keys redacted alike keep both values
                    n += 1
                    unique = f"{key} ({n})"
                out[unique] = self(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message and traceback before any handler formats it."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redact.fragments:
            return True
        record.msg, record.args = self.redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self.redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
        return True
