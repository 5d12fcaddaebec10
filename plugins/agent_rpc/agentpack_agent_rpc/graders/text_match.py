"""``text_match``: contains, equals, does_not_contain, not_equals, regex, not_regex; optional case folding.

Negative conditions pass on an empty or absent field (there is nothing there
that could match); positive ones fail on it, saying the field was empty.

Patterns are Python ``re`` syntax, matched by the ``regex`` library, which can stop a match: a pattern
that backtracks without end (``^(a+)+$``) is stopped at the step's grading deadline and the check is an
error naming the grader, never a hung run.
"""

from __future__ import annotations

import math
import time
from typing import Any

from .base import Check, GradeContext, GraderConfigError, clip

NEGATIVE = {"does_not_contain", "not_equals", "not_regex"}
VERB = {
    "contains": "contain",
    "equals": "equal",
    "does_not_contain": "not contain",
    "not_equals": "not equal",
    "regex": "match regex",
    "not_regex": "not match regex",
}


class TextMatch:
    def __init__(self, config: dict[str, Any]) -> None:
        self.field = config.get("field", "public_output")
        self.condition = config["condition"]
        self.case_sensitive = config.get("case_sensitive", True)
        self.name = config.get("name")
        if self.condition in ("regex", "not_regex"):
            self.needle = config.get("pattern")
            if not self.needle:
                raise GraderConfigError(f"condition {self.condition} needs 'pattern'", "condition")
            import regex  # type: ignore[import-untyped]  # regex ships no stubs; only for regex conditions

            try:
                self.regex = regex.compile(self.needle, 0 if self.case_sensitive else regex.IGNORECASE)
            except (regex.error, TypeError) as exc:
                raise GraderConfigError(f"invalid regular expression: {exc}", "pattern") from None
        else:
            self.needle = config.get("value")
            if self.needle is None:
                raise GraderConfigError(f"condition {self.condition} needs 'value'", "condition")
            self.folded = self.needle if self.case_sensitive else self.needle.casefold()

    def _hit(self, text: str, deadline: float) -> bool:
        if self.condition in ("regex", "not_regex"):
            timeout = None if deadline == math.inf else max(deadline - time.monotonic(), 0.001)
            return self.regex.search(text, timeout=timeout) is not None
        hay = text if self.case_sensitive else text.casefold()
        if self.condition in ("contains", "does_not_contain"):
            return self.folded in hay
        return hay == self.folded

    def grade(self, result: Any, context: GradeContext) -> Check:
        text = getattr(result, self.field, None)
        negative = self.condition in NEGATIVE
        expected = {self.condition: self.needle, **({} if self.case_sensitive else {"case_sensitive": False})}
        want = f"{self.field} to {VERB[self.condition]} {self.needle!r}"
        if not text:
            state = "absent" if text is None else "empty"
            reason = (
                f"passed: {self.field} is {state}, so it cannot match {self.needle!r}"
                if negative
                else f"expected {want}, but {self.field} was {state}"
            )
            return Check("text_match", self.field, negative, expected, text, reason, name=self.name)
        try:
            hit = self._hit(text, context.deadline)
        except TimeoutError:
            who = f"grader {self.name!r}" if self.name else "grader text_match"
            reason = f"{who}: the pattern {self.needle!r} did not finish matching within the step's deadline"
            return Check("text_match", self.field, False, expected, clip(text), reason, error=True, name=self.name)
        passed = hit != negative
        if passed:
            reason = f"{self.field} does {VERB[self.condition]} {self.needle!r}"
        else:
            reason = f"expected {want}, but it did not; saw {clip(text, 200)!r}"
        return Check("text_match", self.field, passed, expected, clip(text), reason, name=self.name)
