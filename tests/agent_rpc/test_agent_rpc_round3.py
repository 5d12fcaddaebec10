"""Hostile manifests and agents, round 3 (issue 24): a pathological grader regex, protocol strings meant for
the terminal, and invalid manifests that must not run."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(120)  # the regex case hung past every deadline before the fix

EVIL = "(a|aa)+$"  # Python's re backtracks on it for hours (``regex`` itself short-cuts ``(a+)+$``)


def test_a_backtracking_regex_grader_ends_as_an_error_naming_the_grader(agentpack_cli, write_manifest, tmp_path):
    """``(a|aa)+$`` on 40 ``a``s and a ``!`` backtracks for minutes in ``re``: the match stops at the step's
    deadline and the case is an error naming the grader; the next scenario still runs."""
    grader = {"type": "text_match", "name": "evil-regex", "condition": "regex", "pattern": EVIL}
    path = write_manifest(
        [
            {"name": "evil", "step_timeout": 1, "steps": [{"input": "a" * 40 + "!", "graders": [grader]}]},
            {"name": "after", "steps": [{"input": "hello", "graders": [{**grader, "pattern": "hel+o"}]}]},
        ]
    )
    out = tmp_path / "r.json"
    result = agentpack_cli("rpc", "run", "-m", path, "--json-out", out)
    assert result.exit_code == 1, result.stdout + result.stderr
    by_name = {s["name"]: s for s in json.loads(out.read_text())["scenarios"]}
    evil = by_name["evil"]
    assert evil["status"] == "error" and evil["exit_reason"] == "grader_error", evil
    check = evil["runs"][0]["steps"][0]["checks"][0]
    assert check["error"] is True and "grader 'evil-regex'" in check["reason"] and "deadline" in check["reason"]
    assert by_name["after"]["status"] == "passed"
