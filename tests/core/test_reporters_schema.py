"""The report envelope schema (core/agentpack/kernel/schemas/report.v1.json) and the pydantic Report agree."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

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
from agentpack.kernel.schemas import core_schemas

REPORT_ID = "https://agentpack.dev/schemas/core/report.v1.json"


def schema_findings(data):
    return core_schemas().validate(REPORT_ID, data)


def model_accepts(data) -> bool:
    """Whether the pydantic model takes the dumped envelope (derived fields removed: see test_reporters)."""
    data = copy.deepcopy(data)
    for key in ("ok", "summary"):
        data.pop(key, None)
    for item in data.get("items", []):
        if isinstance(item, dict):
            item.pop("ok", None)
    for ev in data.get("evaluations", []):
        if isinstance(ev, dict):
            ev.pop("totals", None)
            for suite in ev.get("suites", []):
                if isinstance(suite, dict):
                    suite.pop("totals", None)
    try:
        Report.model_validate(data)
    except ValidationError:
        return False
    return True


# --- strategies: reports the model can hold, within the envelope's documented meaning ---------------

text = st.text(max_size=12)
maybe_text = st.none() | text
position = st.none() | st.integers(min_value=1, max_value=10_000)
pointer = st.none() | st.lists(st.text(max_size=4), max_size=3).map(
    lambda parts: "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
seconds = st.floats(min_value=0, max_value=1e4, allow_nan=False)
aware = st.none() | st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)

findings = st.builds(
    Finding,
    severity=st.sampled_from(["error", "warning", "info"]),
    code=st.text(min_size=1, max_size=8),
    message=text,
    file=maybe_text,
    line=position,
    column=position,
    pointer=pointer,
    hint=maybe_text,
)
assertions = st.builds(
    AssertionResult, name=text, passed=st.booleans(), expected=json_value, actual=json_value, message=text
)
cases = st.builds(
    CaseResult,
    id=text,
    name=maybe_text,
    status=st.sampled_from(["passed", "failed", "error", "skipped"]),
    duration_s=seconds,
    message=text,
    file=maybe_text,
    line=position,
    assertions=st.lists(assertions, max_size=3),
    details=st.dictionaries(text, json_value, max_size=3),
)
suites = st.builds(
    SuiteResult, id=text, name=maybe_text, file=maybe_text, duration_s=seconds, cases=st.lists(cases, max_size=4)
)
evaluations = st.builds(
    EvalReport,
    name=text,
    format=text,
    path=maybe_text,
    started_at=aware,
    duration_s=seconds,
    suites=st.lists(suites, max_size=3),
    metadata=st.dictionaries(text, json_value, max_size=3),
    findings=st.lists(findings, max_size=2),
)
reports = st.builds(
    Report,
    command=st.text(min_size=1, max_size=10),
    tool=st.builds(ToolInfo, version=text),
    generated_at=aware,
    items=st.lists(
        st.builds(ValidationItem, path=text, format=maybe_text, findings=st.lists(findings, max_size=4)), max_size=3
    ),
    evaluations=st.lists(evaluations, max_size=2),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(reports)
def test_every_dumped_report_validates(report):
    data = report.model_dump(mode="json")
    assert schema_findings(data) == []
    assert json.loads(report.model_dump_json()) == data
    assert model_accepts(data)


def test_examples_validate():
    empty = Report(command="validate")
    assert schema_findings(empty.model_dump(mode="json")) == []
    one = Report(
        command="validate",
        generated_at=datetime(2026, 1, 1, tzinfo=UTC),
        items=[ValidationItem(path="p", findings=[Finding.error("X1", "m", file="f", line=1)])],
    )
    assert schema_findings(one.model_dump(mode="json")) == []
    evaluation = EvalReport(
        name="e",
        format="ecp",
        suites=[
            SuiteResult(
                id="s",
                cases=[
                    CaseResult(
                        id="c",
                        status="failed",
                        assertions=[AssertionResult(name="a", passed=False, expected=[1], actual={"b": None})],
                    )
                ],
            )
        ],
    )
    data = Report(command="eval", evaluations=[evaluation]).model_dump(mode="json")
    assert schema_findings(data) == [] and data["summary"]["cases"]["failed"] == 1


def valid_envelope() -> dict:
    finding = Finding.warning("X2", "m", file="f", line=3, pointer="/a")
    evaluation = EvalReport(
        name="e",
        format="ecp",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        suites=[SuiteResult(id="s", cases=[CaseResult(id="c", status="passed")])],
    )
    return Report(
        command="eval", items=[ValidationItem(path="p", findings=[finding])], evaluations=[evaluation]
    ).model_dump(mode="json")


def mutate(path, value=None, *, delete=False):
    def apply(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if delete:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return data

    return apply


MUTATIONS = {
    "schema_version 2": mutate(["schema_version"], 2),
    "unknown top-level key": mutate(["extra"], 1),
    "missing command": mutate(["command"], delete=True),
    "bad severity": mutate(["items", 0, "findings", 0, "severity"], "fatal"),
    "unknown finding key": mutate(["items", 0, "findings", 0, "where"], "x"),
    "missing finding code": mutate(["items", 0, "findings", 0, "code"], delete=True),
    "bad case status": mutate(["evaluations", 0, "suites", 0, "cases", 0, "status"], "flaky"),
    "missing case id": mutate(["evaluations", 0, "suites", 0, "cases", 0, "id"], delete=True),
    "assertion without passed": mutate(["evaluations", 0, "suites", 0, "cases", 0, "assertions"], [{"name": "a"}]),
    "items not a list": mutate(["items"], {}),
    "generated_at not a date": mutate(["generated_at"], "yesterday"),
    "details not a mapping": mutate(["evaluations", 0, "suites", 0, "cases", 0, "details"], [1]),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_schema_and_model_refuse_the_same_mistakes(name):
    data = MUTATIONS[name](valid_envelope())
    assert schema_findings(data), f"schema accepts: {name}"
    assert not model_accepts(data), f"model accepts: {name}"


def test_schema_findings_point_at_the_field():
    data = MUTATIONS["bad severity"](valid_envelope())
    (finding,) = schema_findings(data)
    assert finding.pointer == "/items/0/findings/0/severity"


KNOWN_GAPS = {  # the model accepts these; the schema states the meaning (see the report for models.py)
    "naive datetime": mutate(["generated_at"], "2026-01-01T00:00:00"),
    "line 0": mutate(["items", 0, "findings", 0, "line"], 0),
    "negative duration": mutate(["evaluations", 0, "duration_s"], -1.0),
    "line as text": mutate(["items", 0, "findings", 0, "line"], "3"),  # pydantic's lax mode coerces it
}


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
def test_schema_is_stricter_than_the_model_here(name):
    data = KNOWN_GAPS[name](valid_envelope())
    assert schema_findings(data) and model_accepts(data)
