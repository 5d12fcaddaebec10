"""One status vocabulary (``agentpack.results.status``): a run, an evaluation and a case history in words."""

import pytest

from agentpack.results.status import case_history, evaluation_status, headline, rate_text, verdict


def counts(passed=0, failed=0, errors=0, skipped=0):
    return {
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
        "total": passed + failed + errors + skipped,
    }


@pytest.mark.parametrize(
    ("status", "numbers", "word", "line"),
    [
        ("passed", counts(5), "passed", "PASSED 5 passed of 5 (100.0%)"),
        (
            "passed",
            counts(1, skipped=4),
            "partly run",
            "PARTLY RUN 1 passed, 4 not run of 5 (100.0% of the 1 that ran)",
        ),
        ("passed", counts(skipped=3), "not run", "NOT RUN 0 passed, 3 not run of 3"),
        ("failed", counts(3, 1, 1), "failed", "FAILED 3 passed, 1 failed, 1 errors of 5 (60.0%)"),
        ("interrupted", counts(5, 1), "interrupted", "INTERRUPTED after 6 cases: 5 passed, 1 failed"),
        ("error", counts(0, errors=1), "error", "ERROR: it could not finish (0 passed, 1 errors of 1)"),
    ],
)
def test_a_run_in_words(status, numbers, word, line):
    assert verdict(status, **numbers) == word
    assert headline(status, **numbers) == line


def test_no_rate_stands_for_a_run_that_did_not_finish_or_run():
    assert rate_text(status="interrupted", **counts(5, 1)) == ""
    assert rate_text(status="passed", **counts(skipped=2)) == ""


def test_an_evaluation_reason_names_its_status():
    assert evaluation_status("interrupted (Ctrl-C) before the evaluation finished", failed=0, errors=0) == "interrupted"
    assert evaluation_status("agent unreachable", failed=0, errors=0) == "error"
    assert evaluation_status(None, failed=1, errors=0) == "failed"


@pytest.mark.parametrize(
    ("history", "word"),
    [
        (["passed", "passed"], "passing"),
        (["failed", "failed", "error"], "still failing"),
        (["passed", "failed"], "regressed"),
        (["passed", "passed", "failed", "failed"], "regressed"),
        (["failed", "passed"], "fixed"),
        (["passed", "failed", "passed"], "flaky"),
        (["failed", "passed", "failed"], "flaky"),
        (["passed", "skipped", "passed"], "passing"),
    ],
)
def test_a_case_history_in_words(history, word):
    assert case_history(history) == word
