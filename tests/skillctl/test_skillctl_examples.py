"""The five foundational skills of spec section 6 pass their fixtures and tests, deterministically."""

from __future__ import annotations

import pytest
from skillctl_testkit import EXAMPLES

from agentpack.kernel.models import EvalOptions
from agentpack_skillctl.skilltest import evaluate

pytestmark = pytest.mark.timeout(120)


def test_foundational_skills_pass_with_determinism_checked():
    report = evaluate(EXAMPLES, EvalOptions(options={"check_determinism": True}))
    assert sorted(s.id for s in report.suites) == [
        "fs.hash_tree",
        "schema.validate_json",
        "security.scan_secrets",
        "skill.validate_manifest",
        "workflow.create_revision_snapshot",
    ]
    failures = [(s.id, c.id, c.message) for s in report.suites for c in s.cases if c.status != "passed"]
    assert failures == []
    for suite in report.suites:
        kinds = {c.id.split(":")[0] for c in suite.cases}
        assert kinds == {"fixture", "test"}, suite.id
        for case in suite.cases:
            if case.id.startswith("fixture:") and case.details["report"]["status"] == "ok":
                assert case.details["report"]["determinismCheck"]["identical"] is True
