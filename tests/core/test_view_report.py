"""The HTML report shows what the viewer shows: charts, failures first, questions, tool calls, stderr."""

import re

from agentpack.kernel.models import CaseResult, EvalReport, Finding, Report, SuiteResult, ValidationItem
from agentpack.results.reporters import html


def _report(**evaluation):
    cases = [
        CaseResult(id="q1", name="What is the datum?", status="passed", duration_s=0.01),
        CaseResult(
            id="q2",
            name="Which tool refunds?",
            status="failed",
            duration_s=0.2,
            details={"tool_calls": [{"name": "refund", "arguments": {"order": 7}}]},
        ),
    ]
    values = {"name": "pack", "format": "ecp", "suites": [SuiteResult(id="smoke", cases=cases)], **evaluation}
    return Report(command="eval", evaluations=[EvalReport(**values)])


def test_the_report_draws_the_three_charts():
    page = html.render(_report())
    assert 'class="chart chart-passrate"' in page and 'class="chart chart-suites"' in page
    assert 'class="chart chart-hist"' in page
    assert 'aria-label="pass rate 50%: 1 passed, 1 failed, 0 errors, 0 skipped"' in page
    assert not re.search(r"https?://", page)


def test_questions_and_tool_calls_are_shown_readably():
    page = html.render(_report())
    assert "What is the datum?" in page and "Which tool refunds?" in page
    assert "&quot;arguments&quot;: {\n      &quot;order&quot;: 7\n    }" in page  # indented JSON
    assert page.index("smoke / q2") < page.index("smoke / q1")


def test_an_unreachable_agent_shows_its_stderr_first():
    evaluation = {
        "aborted": "agent unreachable",
        "suites": [
            SuiteResult(
                id="s",
                cases=[
                    CaseResult(
                        id="c",
                        status="error",
                        details={"runs": [{"status": "error", "stderr": "python: can't open file 'agent.py'"}]},
                    )
                ],
            )
        ],
    }
    page = html.render(_report(**evaluation))
    banner = page.index('id="aborted"')
    assert banner < page.index("chart-passrate") and "can&#x27;t open file" in page[banner : banner + 400]


def test_infos_are_counted_apart_from_warnings():
    findings = [Finding.warning("W1", "w"), Finding.info("I1", "i"), Finding.info("I2", "j")]
    page = html.render(Report(command="validate", items=[ValidationItem(path="p", findings=findings)]))
    assert '<span class="warn">1 warnings</span><span class="info">2 infos</span>' in page
    assert page.count('data-status="info"') == 4  # two rows, two badges


def test_a_run_report_file_follows_its_suffix(tmp_path, synthetic_report, agentpack_host):
    """``write_run_report``: the viewer's run page as HTML, the command's report as JSON, a reporter otherwise."""
    import json
    import xml.etree.ElementTree as ET

    from agentpack.cli.reportfile import write_run_report
    from agentpack.kernel.registry import RunView
    from agentpack.results.runs import build_run, open_store, save_run

    report = synthetic_report("alpha", "ecp", {"smoke/a": "passed", "smoke/b": ("failed", 0.5, {"question": "Why?"})})
    run = build_run(report, command="eval", input="packs/alpha")
    assert run.id == 0 and (run.total, run.passed, run.failed) == (2, 1, 1)
    view = RunView("v", "A view", ("ecp",), lambda r: f"<p id=from-view>{r.failed} failing</p>")
    write_run_report(run, tmp_path / "r.html", views=[view])
    page = (tmp_path / "r.html").read_text()
    assert "<p id=from-view>1 failing</p>" in page and "Why?" in page and "chart-passrate" in page
    assert "/api/runs" not in page and "trend of this input" not in page and not re.search(r"https?://", page)
    write_run_report(run, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == report
    write_run_report(run, tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    saved = save_run(run, store=tmp_path / "runs.sqlite")
    assert saved is run and run.id == 1
    with open_store(tmp_path / "runs.sqlite") as opened:
        assert opened.get(1).case_map()["smoke/b"].status == "failed"


def test_steps_show_their_checks_and_an_ok_exit_reason_is_never_said():
    """Runs and steps (the agent protocol's details): each step's checks as a table; "exit reason" only when not ok."""
    from agentpack.results.viewer.fragments import case_block, failures_first

    check = {"type": "text_match", "field": "public_output", "passed": False, "expected": "x", "actual": "y"}
    step = {"index": 1, "status": "ok", "exit_reason": "ok", "duration_ms": 2.0, "checks": [{**check, "reason": "no"}]}
    failed = {
        "suite": "s",
        "id": "f",
        "status": "failed",
        "details": {"exit_reason": "ok", "runs": [{"status": "failed", "exit_reason": "ok", "steps": [step]}]},
    }
    page = case_block(failed)
    assert "exit reason" not in page and "text_match on public_output" in page and 'class="assertions"' in page
    timed_out = {**failed, "details": {"runs": [{"status": "error", "exit_reason": "timeout", "steps": []}]}}
    assert "exit reason: timeout" in case_block(timed_out)
    flaky = {"suite": "s", "id": "a", "status": "passed", "details": {"flaky": True}}
    passed = {"suite": "s", "id": "0", "status": "passed"}
    assert [c["id"] for c in failures_first([passed, flaky, failed])] == ["f", "a", "0"]
    assert "flaky" in case_block(flaky)


def test_a_validation_report_charts_its_paths():
    """validate --report x.html: the pass-rate bar counts valid and invalid paths, and the breakdown is per format."""
    items = [
        ValidationItem(path="a", format="ecp", findings=[Finding.error("E1", "broken")]),
        ValidationItem(path="b", format="ecp"),
        ValidationItem(path="c", format="skillctl", findings=[Finding.info("I1", "fine")]),
    ]
    page = html.render(Report(command="validate", items=items))
    assert 'aria-label="pass rate 67%: 2 passed, 1 failed, 0 errors, 0 skipped"' in page
    assert 'aria-label="per-suite results: ecp 1 of 2 passed; skillctl 1 of 1 passed"' in page
    assert 'class="chart chart-hist"' not in page  # nothing was timed


def test_the_cases_table_reads_each_shape_of_case():
    from agentpack.results.viewer.cases import output_of, row_of, tags_of

    question = {
        "id": "q",
        "status": "failed",
        "assertions": [{"name": "cite", "passed": False, "expected": ["a.md"], "actual": ["b.md"]}],
        "details": {"question": "Where?", "answer": "Here.", "tags": ["docs"]},
    }
    assert row_of(question) == {"input": "Where?", "expected": ["a.md"], "actual": ["b.md"], "checks": (0, 1)}
    assert output_of(question) == "Here." and tags_of(question) == ["docs"]
    scenario = {
        "id": "s",
        "status": "failed",
        "details": {
            "runs": [
                {
                    "steps": [
                        {"input": "hi", "public_output": "hello", "checks": [{"passed": True}]},
                        {"input": "bye", "public_output": "ciao", "checks": [{"passed": False, "expected": "bye"}]},
                    ]
                }
            ]
        },
    }
    row = row_of(scenario)
    assert row["input"] == "hi" and row["checks"] == (1, 2) and output_of(scenario) == "ciao"
    assert row["expected"] == "bye"
    planned = {"id": "op", "status": "skipped", "tags": ["a", 1]}
    assert row_of(planned) == {"input": None, "expected": None, "actual": None, "checks": (0, 0)}
    assert output_of(planned) is None and tags_of(planned) == ["a", "1"]


def test_a_report_opens_on_its_cases_table_and_says_the_verdict():
    page = html.render(_report(aborted="interrupted (Ctrl-C) before the end"))
    assert page.index('class="case-table"') < page.index('class="chart chart-passrate"')
    assert "INTERRUPTED after 2 cases: 1 passed, 1 failed" in page and "The run was interrupted: " in page
    assert 'href="#e1-case-1"' in page and 'id="e1-case-1"' in page
