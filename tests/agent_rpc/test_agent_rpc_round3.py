"""Hostile manifests, round 3 (issue 24): a pathological grader regex and invalid manifests that must not run
(protocol strings meant for the terminal: test_agent_rpc_hostile.py)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(120)  # the regex case hung past every deadline before the fix

EVIL = "(a|aa)+$"  # Python's re backtracks on it for minutes (``regex`` itself short-cuts ``(a+)+$``)


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


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"target": "ftp://example.org/agent"}, "ARP106"),
        ({"scenarios": [{"name": "empty", "steps": []}]}, "should be non-empty"),
    ],
    ids=["ftp-target", "empty-steps"],
)
def test_manifests_that_cannot_run_are_invalid(agentpack_cli, write_manifest, change, expected):
    """An ftp:// target is no command and no HTTP agent; ``steps: []`` is a scenario that tests nothing."""
    scenarios = change.pop("scenarios", [{"name": "a", "steps": [{"input": "hi"}]}])
    path = write_manifest(scenarios, **change)
    for command in (["rpc", "validate", path], ["validate", path]):
        result = agentpack_cli(*command)
        assert result.exit_code == 1, result.stdout + result.stderr
        assert expected in result.stdout, result.stdout
