"""The built-in reporters render one Report (findings + an EvalReport) correctly, each in its own format."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from agentpack.kernel.models import (
    AssertionResult,
    CaseResult,
    EvalReport,
    Finding,
    Report,
    SuiteResult,
    ToolInfo,
    ValidationItem,
)
from agentpack.kernel.schemas import SchemaStore, core_schemas

REPORT_ID = "https://agentpack.dev/schemas/core/report.v1.json"
XSS = "<script>alert('x')</script>"


def sample_report() -> Report:
    findings = [
        Finding.error(
            "SKL018",
            f"directory name 'a,b' must match {XSS} & co",
            file="skills/a,b:c/SKILL.md",
            line=2,
            column=1,
            pointer="/name",
            hint="rename the directory",
        ),
        Finding.warning(
            "ECP201", "100% of chunks lack ids\nsecond line", file="pack/expert.yaml", line=7, pointer="/sources/0"
        ),
        Finding.info("ECP900", "index is stale", file="pack/index.json"),
    ]
    cases_a = [
        CaseResult(
            id="passes-first-in-input",
            status="passed",
            duration_s=0.012,
            assertions=[AssertionResult(name="contains", passed=True, expected="x", actual="x y")],
        ),
        CaseResult(
            id="wrong-answer",
            status="failed",
            duration_s=0.5,
            message=f"expected citation {XSS}",
            file="evals/a.yaml",
            line=12,
            assertions=[
                AssertionResult(
                    name="cites", passed=False, expected=["doc-1"], actual=[], message="no citation <b>at all</b>"
                ),
                AssertionResult(name="length", passed=True, expected=10, actual=8),
            ],
            details={"answer": "colour codes \x1b[31mred\x1b[0m and <tags>", "tokens": 42},
        ),
    ]
    cases_b = [
        CaseResult(id="crashed", status="error", message="driver exited with 3"),
        CaseResult(id="not-run", status="skipped", message="needs a model"),
        CaseResult(id="fine", status="passed"),
    ]
    evaluation = EvalReport(
        name="demo-pack",
        format="ecp",
        path="examples/demo",
        duration_s=1.25,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        suites=[
            SuiteResult(id="retrieval", file="evals/a.yaml", duration_s=0.6, cases=cases_a),
            SuiteResult(id="safety", name="Safety", duration_s=0.1, cases=cases_b),
        ],
        metadata={"model": "fake"},
        findings=[Finding.warning("ECP300", "one suite had no cases")],
    )
    return Report(
        command="eval",
        tool=ToolInfo(version="0.1.0"),
        generated_at=datetime(2026, 1, 1, tzinfo=UTC),
        items=[
            ValidationItem(path="skills/a,b:c", format="skill", findings=findings),
            ValidationItem(path="pack", format="ecp"),
        ],
        evaluations=[evaluation],
    )


@pytest.fixture
def render(agentpack_host):
    report = sample_report()
    return lambda name, value=report: agentpack_host.reporter(name).render(value)


def test_all_builtin_reporters_are_registered(agentpack_host):
    assert {"text", "json", "junit", "sarif", "github", "html"} <= set(agentpack_host.reporters())


# --- json ----------------------------------------------------------------------------------------

COMPUTED = {
    "Report": ("ok", "summary"),
    "ValidationItem": ("ok",),
    "EvalReport": ("totals",),
    "SuiteResult": ("totals",),
}


def strip_computed(data: dict) -> dict:
    """The dumped envelope without the derived fields (ok, summary, totals) the models compute."""
    data = {k: v for k, v in data.items() if k not in ("ok", "summary")}
    data["items"] = [{k: v for k, v in i.items() if k != "ok"} for i in data["items"]]
    data["evaluations"] = [
        {
            **{k: v for k, v in e.items() if k != "totals"},
            "suites": [{k: v for k, v in s.items() if k != "totals"} for s in e["suites"]],
        }
        for e in data["evaluations"]
    ]
    return data


def test_json_parses_and_round_trips(render):
    report = sample_report()
    data = json.loads(render("json"))
    assert data["schema_version"] == 1 and data["command"] == "eval" and data["ok"] is False
    assert data["summary"] == {
        "paths": 2,
        "errors": 1,
        "warnings": 1,
        "infos": 1,
        "cases": {"total": 5, "passed": 2, "failed": 1, "errors": 1, "skipped": 1, "pass_rate": 0.5},
    }
    back = Report.model_validate(strip_computed(data))
    assert back == report
    assert back.model_dump(mode="json") == data  # the derived fields recompute to what was printed


def test_json_round_trips_without_help(render):
    assert Report.model_validate_json(render("json")) == sample_report()


# --- junit ---------------------------------------------------------------------------------------


def test_junit_parses_with_right_counts(render):
    root = ET.fromstring(render("junit").encode("utf-8"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "2", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["skills/a,b:c", "pack", "demo-pack.retrieval", "demo-pack.safety"]
    assert (suites["skills/a,b:c"].get("tests"), suites["skills/a,b:c"].get("failures")) == ("1", "1")
    assert suites["pack"].find("testcase").get("name") == "valid"
    safety = suites["demo-pack.safety"]
    assert [safety.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["3", "0", "1", "1"]
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["wrong-answer"].find("failure")
    assert "cites: no citation <b>at all</b> (expected ['doc-1'], got [])" in failure.text
    assert cases["crashed"].find("error").get("message") == "driver exited with 3"
    assert cases["not-run"].find("skipped") is not None
    assert cases["fine"].find("*") is None
    for suite in root.findall("testsuite"):
        tests = int(suite.get("tests"))
        assert tests == max(1, len(suite.findall("testcase")))


def test_junit_survives_characters_xml_cannot_hold(render):
    report = sample_report()
    report.evaluations[0].suites[0].cases[1].message = "bell \x07 escape \x1b[0m nul \x00 end"
    root = ET.fromstring(render("junit", report).encode("utf-8"))
    failure = next(c for c in root.iter("testcase") if c.get("name") == "wrong-answer").find("failure")
    assert failure.get("message") == "bell \\x07 escape \\x1b[0m nul \\x00 end"


# --- sarif ---------------------------------------------------------------------------------------

SARIF_SUBSET = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://agentpack.test/sarif-2.1.0-subset.json",
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "format": "uri"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "informationUri": {"type": "string", "format": "uri"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {"$ref": "#/$defs/message"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {"level": {"$ref": "#/$defs/level"}},
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "level", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string", "minLength": 1},
                                "level": {"$ref": "#/$defs/level"},
                                "message": {"$ref": "#/$defs/message"},
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {
                                                            "uri": {"type": "string", "format": "uri-reference"}
                                                        },
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine"],
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1},
                                                            "startColumn": {"type": "integer", "minimum": 1},
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                                "properties": {"type": "object"},
                            },
                        },
                    },
                },
            },
        },
    },
    "$defs": {
        "level": {"enum": ["none", "note", "warning", "error"]},
        "message": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
    },
}


def test_sarif_is_structurally_valid(render):
    sarif = json.loads(render("sarif"))
    store = SchemaStore([SARIF_SUBSET])
    assert store.validate(SARIF_SUBSET["$id"], sarif) == []
    run = sarif["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in run["results"]} == rule_ids
    results = {r["ruleId"]: r for r in run["results"]}
    first = results["SKL018"]
    assert first["level"] == "error" and first["properties"] == {"pointer": "/name"}
    location = first["locations"][0]["physicalLocation"]
    assert location["region"] == {"startLine": 2, "startColumn": 1}
    assert location["artifactLocation"]["uri"] == "skills/a,b:c/SKILL.md"
    assert "(hint: rename the directory)" in first["message"]["text"]
    assert results["ECP201"]["level"] == "warning" and results["ECP900"]["level"] == "note"
    assert "region" not in results["ECP900"]["locations"][0]["physicalLocation"]
    evals = [r for r in run["results"] if r["ruleId"].startswith("EVAL-")]
    assert sorted(r["message"]["text"].split(":")[0] for r in evals) == ["retrieval/wrong-answer", "safety/crashed"]
    failed = next(r for r in evals if r["ruleId"] == "EVAL-FAIL")
    assert failed["locations"][0]["physicalLocation"]["region"] == {"startLine": 12}


def test_sarif_uris_are_uri_references(render):
    report = sample_report()
    report.items[0].path = "my skills"
    report.items[0].findings[0] = report.items[0].findings[0].model_copy(update={"file": "my skills/100%/SKILL.md"})
    sarif = json.loads(render("sarif", report))
    store = SchemaStore([SARIF_SUBSET])
    assert store.validate(SARIF_SUBSET["$id"], sarif) == []
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "my%20skills/100%25/SKILL.md"


# --- github --------------------------------------------------------------------------------------


def unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_annotations_escape(render):
    lines = render("github").splitlines()
    assert len(lines) == 5  # three findings, one failed case, one errored case
    pattern = re.compile(r"^::(error|warning|notice) ((?:[a-z]+=[^,:]*)(?:,[a-z]+=[^,:]*)*)::(.*)$")
    parsed = []
    for line in lines:
        match = pattern.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match[2].split(","))
        parsed.append((match[1], {k: unescape(v) for k, v in props.items()}, unescape(match[3])))
    kind, props, message = parsed[0]
    assert kind == "error" and props == {"file": "skills/a,b:c/SKILL.md", "line": "2", "col": "1", "title": "SKL018"}
    assert message.startswith("directory name 'a,b' must match") and message.endswith("(hint: rename the directory)")
    kind, props, message = parsed[1]
    assert kind == "warning" and message == "100% of chunks lack ids\nsecond line"
    assert "100%25 of chunks lack ids%0Asecond line" in lines[1]
    assert parsed[2][0] == "notice" and "line" not in parsed[2][1]
    assert parsed[3][1]["title"] == "retrieval/wrong-answer" and parsed[3][1]["line"] == "12"
    assert parsed[4][1] == {"file": "examples/demo", "title": "safety/crashed"}


def test_github_says_so_when_all_is_clear(render, agentpack_cli, tmp_path):
    """A clean report is one notice in the job's annotations, never silence (which reads as 'did it run?')."""
    clean = Report(command="validate", items=[ValidationItem(path="a"), ValidationItem(path="b")])
    assert render("github", clean) == "::notice title=agentpack validate::2 packs checked, no findings\n"
    skill = tmp_path / "fine-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: fine-skill\ndescription: Fine.\n---\nBody.\n")
    done = agentpack_cli("validate", "-o", "github", str(skill))
    assert done.exit_code == 0 and done.stdout == "::notice title=agentpack validate::1 pack checked, no findings\n"


# --- html ----------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_is_self_contained_and_escaped(render):
    page = render("html")
    parser = _Tags()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    assert tags.count("script") == 1 and "link" not in tags and "img" not in tags and "iframe" not in tags
    assert all("src" not in attrs for _, attrs in parser.tags)
    assert all(attrs["href"].startswith("#") for _, attrs in parser.tags if "href" in attrs)  # in-page links only
    assert not re.search(r"(?i)url\(|@import|https?://", page)
    assert XSS not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<b>at all</b>" not in page and "&lt;b&gt;at all&lt;/b&gt;" in page
    assert "and &lt;tags&gt;" in page  # case details are escaped too


def test_html_lists_failures_before_passes(render):
    page = render("html")
    order = [
        page.index(f"/ {case}") for case in ("wrong-answer", "crashed", "not-run", "passes-first-in-input", "fine")
    ]
    assert order[0] < order[3] and order[1] < order[3] and order[2] < order[3] and max(order[:3]) < order[4]
    assert "5 cases" in page and "2 passed" in page and "1 failed" in page and "pass rate 50%" in page
    assert "FAILED" in page
    assert (
        len(re.findall(r'<details class="case" id="[^"]*" data-case="[^"]*" data-status="passed">', page)) == 2
    )  # closed
    assert page.count('<details class="case failing" open') == 2  # failing ones open


# --- text ----------------------------------------------------------------------------------------


def test_text_report(render):
    text = render("text")
    assert "skills/a,b:c/SKILL.md:2:1: error SKL018 directory name" in text
    assert "    hint: rename the directory" in text
    assert "skills/a,b:c (skill): invalid" in text and "pack (ecp): ok" in text
    assert text.index("FAIL wrong-answer") < text.index("PASS passes-first-in-input")
    assert "        x cites: no citation <b>at all</b>" in text
    assert "2 checked: 1 errors, 1 warnings, 1 infos" in text  # infos counted apart from warnings


def test_text_report_counts_infos_apart_from_warnings():
    from agentpack.kernel.models import Finding, Report, ValidationItem
    from agentpack.results.reporters import text

    findings = [Finding.warning("W1", "w"), Finding.info("I1", "i"), Finding.info("I2", "j")]
    rendered = text.render(Report(command="validate", items=[ValidationItem(path="p", findings=findings)]))
    assert rendered.endswith("1 checked: 0 errors, 1 warnings, 2 infos\n")


# --- the envelope schema -------------------------------------------------------------------------


def test_report_schema_is_bundled():
    store = core_schemas()
    assert REPORT_ID in store.ids()
    assert store.schema(REPORT_ID)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
