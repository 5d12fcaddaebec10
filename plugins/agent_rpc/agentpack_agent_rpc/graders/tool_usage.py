"""``tool_usage``: a call by name with an argument subset (nested), ``not_called``, counts, an ordered sequence.

Argument matching is a nested subset: every expected key must be present and
match; objects recurse, arrays must have the same length and match item by
item, anything else compares equal. Without ``tool_name`` any call name matches.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Check, GradeContext, GraderConfigError


def subset_match(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset_match(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(subset_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return expected == actual


def _show(call: dict[str, Any]) -> str:
    args = call.get("arguments") or {}
    return f"{call.get('name')}({json.dumps(args, ensure_ascii=False, sort_keys=True)[:120]})"


class ToolUsage:
    def __init__(self, config: dict[str, Any]) -> None:
        self.name = config.get("name")
        self.tool = config.get("tool_name")
        self.arguments = config.get("arguments") or {}
        self.not_called = bool(config.get("not_called", False))
        self.count, self.min_count, self.max_count = (config.get(k) for k in ("count", "min_count", "max_count"))
        self.sequence: list[dict[str, Any]] = [
            {"name": s} if isinstance(s, str) else s for s in config.get("sequence") or []
        ]
        counted = any(v is not None for v in (self.count, self.min_count, self.max_count))
        if self.sequence and (self.tool or self.arguments or self.not_called or counted):
            raise GraderConfigError(
                "'sequence' cannot be combined with tool_name, arguments, not_called or counts", "sequence"
            )
        if self.not_called and counted:
            raise GraderConfigError("'not_called' cannot be combined with count, min_count or max_count", "not_called")
        if self.min_count is not None and self.max_count is not None and self.min_count > self.max_count:
            raise GraderConfigError(
                f"min_count {self.min_count} is larger than max_count {self.max_count}", "min_count"
            )

    def _matches(self, call: dict[str, Any], name: str | None, arguments: dict[str, Any]) -> bool:
        return (name is None or call.get("name") == name) and subset_match(arguments, call.get("arguments") or {})

    def _wanted(self) -> str:
        what = f"'{self.tool}'" if self.tool else "any tool"
        if self.arguments:
            what += f" with arguments including {json.dumps(self.arguments, sort_keys=True)}"
        return what

    def grade(self, result: Any, context: GradeContext) -> Check:
        calls = list(getattr(result, "tool_calls", None) or [])
        seen = [_show(c) for c in calls]
        seen_text = ", ".join(seen) if seen else "no tool calls"
        if self.sequence:
            return self._grade_sequence(calls, seen, seen_text)
        hits = sum(1 for c in calls if self._matches(c, self.tool, self.arguments))
        expected: dict[str, Any] = {"tool_name": self.tool, "arguments": self.arguments}
        if self.not_called:
            expected["not_called"] = True
            passed = hits == 0
            reason = (
                f"no call to {self._wanted()}; saw {seen_text}"
                if passed
                else f"expected no call to {self._wanted()}, but saw {hits}: {seen_text}"
            )
        elif any(v is not None for v in (self.count, self.min_count, self.max_count)):
            bounds = []
            if self.count is not None:
                bounds.append(f"exactly {self.count}")
                expected["count"] = self.count
            if self.min_count is not None:
                bounds.append(f"at least {self.min_count}")
                expected["min_count"] = self.min_count
            if self.max_count is not None:
                bounds.append(f"at most {self.max_count}")
                expected["max_count"] = self.max_count
            passed = (
                (self.count is None or hits == self.count)
                and (self.min_count is None or hits >= self.min_count)
                and (self.max_count is None or hits <= self.max_count)
            )
            reason = f"expected {' and '.join(bounds)} call(s) to {self._wanted()}, saw {hits}" + (
                "" if passed else f": {seen_text}"
            )
        else:
            passed = hits > 0
            reason = (
                f"found a call to {self._wanted()}"
                if passed
                else f"expected a call to {self._wanted()}, but saw {seen_text}"
            )
        return Check("tool_usage", "tool_calls", passed, expected, seen, reason, name=self.name)

    def _grade_sequence(self, calls: list[dict[str, Any]], seen: list[str], seen_text: str) -> Check:
        position = 0
        for index, want in enumerate(self.sequence):
            while position < len(calls) and not self._matches(
                calls[position], want["name"], want.get("arguments") or {}
            ):
                position += 1
            if position == len(calls):
                reason = (
                    f"expected tool calls in order {[w['name'] for w in self.sequence]}; "
                    f"item {index + 1} ('{want['name']}') not found after the earlier ones; saw {seen_text}"
                )
                return Check(
                    "tool_usage", "tool_calls", False, {"sequence": self.sequence}, seen, reason, name=self.name
                )
            position += 1
        return Check(
            "tool_usage",
            "tool_calls",
            True,
            {"sequence": self.sequence},
            seen,
            f"tool calls happened in order {[w['name'] for w in self.sequence]}",
            name=self.name,
        )
