"""A skill's fixture cases (an input, the output it must give, the status it must end with), in the three
layouts skills are written in:

- ``fixtures/<case>.input.json`` + ``<case>.expected.json`` [+ ``<case>.status``]  (agentpack's)
- ``fixtures/input.json`` + ``output.expected.json`` [+ ``status``]  (the origin's; case ``default``)
- ``fixtures/<case>/input.json`` + ``output.expected.json`` [+ ``status``]  (the origin's, one folder per case)

``fixtures/workspace/`` is the template workspace, never a case.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from agentpack.io.userfiles import read_text

STATUSES = ("ok", "invalid_input", "invalid_output", "failed", "timeout", "violation", "nondeterministic", "error")
WORKSPACE = "workspace"
INPUT, EXPECTED, STATUS = "input.json", "output.expected.json", "status"
ROOT_CASE = "default"
PLACEHOLDER = "REPLACE_ME"
"""An expected value that stands for whatever the run gives (a path, a digest of it): the origin's fixtures
write it where the output depends on the machine, and its tests drop that key from both sides."""


def output_matches(want: object, actual: object) -> bool:
    """Whether ``actual`` is the expected output ``want``, where a ``PLACEHOLDER`` value in ``want`` (at any
    depth) matches any value, or the key's absence, in ``actual``."""
    if want == PLACEHOLDER:
        return True
    if isinstance(want, dict) and isinstance(actual, dict):
        keys = want.keys() | actual.keys()
        return all(
            (k in want and want[k] == PLACEHOLDER) or (k in want and k in actual and output_matches(want[k], actual[k]))
            for k in keys
        )
    if isinstance(want, list) and isinstance(actual, list):
        return len(want) == len(actual) and all(map(output_matches, want, actual))
    return want == actual


class FixtureCase(NamedTuple):
    name: str
    input: Path
    expected: Path | None
    """The output the run must give (compared as JSON), when the case has one."""
    status_file: Path
    """Where the status the run must end with is written (``ok`` when the file is absent)."""

    def status(self) -> str:
        """The expected status (one word), ``ok`` without a status file.

        ``PackError`` when that file cannot be read (a folder, a FIFO, a dangling link, not UTF-8...).
        """
        return read_text(self.status_file).strip() if os.path.lexists(self.status_file) else "ok"


def _case(name: str, folder: Path, input_name: str, expected_name: str, status_name: str) -> FixtureCase:
    expected = folder / expected_name
    return FixtureCase(name, folder / input_name, expected if os.path.lexists(expected) else None, folder / status_name)


def fixture_cases(directory: Path) -> list[FixtureCase]:
    """The fixture cases of the skill folder ``directory``, in name order (the root pair first)."""
    folder = directory / "fixtures"
    if not folder.is_dir():
        return []
    cases = []
    if os.path.lexists(folder / INPUT):
        cases.append(_case(ROOT_CASE, folder, INPUT, EXPECTED, STATUS))
    for path in sorted(folder.iterdir()):  # a case's files may be anything: reading them says what is wrong
        if path.name.endswith(".input.json"):
            case = path.name[: -len(".input.json")]
            cases.append(_case(case, folder, path.name, f"{case}.expected.json", f"{case}.status"))
        elif path.name != WORKSPACE and path.is_dir() and os.path.lexists(path / INPUT):
            cases.append(_case(path.name, path, INPUT, EXPECTED, STATUS))
    return cases


def orphans(directory: Path, cases: list[FixtureCase]) -> list[Path]:
    """Expected outputs that belong to no case (an input missing or misnamed)."""
    folder = directory / "fixtures"
    used = {case.expected for case in cases}
    candidates = [*folder.glob("*.expected.json"), *folder.glob(f"*/{EXPECTED}")]
    return sorted(p for p in candidates if p not in used and p.parent.name != WORKSPACE)


__all__ = ["STATUSES", "FixtureCase", "fixture_cases", "orphans"]
