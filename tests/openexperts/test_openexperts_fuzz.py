"""Whatever a user writes into expert.yaml or a process, validation answers with findings, never a traceback."""

import shutil
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLE = Path(__file__).parents[2] / "examples" / "openexperts" / "acme-support"
BASE = yaml.safe_load((EXAMPLE / "expert.yaml").read_text())

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, width=16), st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
POINTERS = [
    ("spec",),
    ("requires",),
    ("requires", "tools"),
    ("concurrency",),
    ("concurrency", "key"),
    ("execution",),
    ("execution", "retry"),
    ("execution", "timeout"),
    ("delivery",),
    ("policy",),
    ("policy", "approval"),
    ("policy", "approval", "overrides"),
    ("triggers",),
    ("triggers", 0),
    ("triggers", 1, "expr"),
    ("triggers", 1, "tz"),
    ("triggers", 0, "payload_mapping"),
    ("triggers", 2, "concurrency_key"),
    ("components",),
    ("components", "functions"),
    ("components", "orchestrator"),
    ("outputs",),
]
PROCESS_KEYS = ["inputs", "functions", "tools", "scratchpad", "context", "execution", "delivery", "trigger", "name"]


def _set(data, pointer, value):
    target = data
    for key in pointer[:-1]:
        target = target[key]
    target[pointer[-1]] = value


_ROOT: list[Path] = []
PROCESS_TEXT = (EXAMPLE / "processes" / "triage-ticket.md").read_text()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.sampled_from(POINTERS), VALUES), min_size=1, max_size=3),
    process_edit=st.tuples(st.sampled_from(PROCESS_KEYS), VALUES),
)
def test_validation_never_crashes(tmp_path_factory, edits, process_edit):
    from agentpack.kernel.plugins import get_host
    from agentpack_openexperts.loader import load_package
    from agentpack_openexperts.validate import validate_package

    if not _ROOT:  # one copy; every example rewrites the two files it changes
        _ROOT.append(tmp_path_factory.mktemp("fuzz") / "pack")
        shutil.copytree(EXAMPLE, _ROOT[0])
    root = _ROOT[0]
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for pointer, value in edits:
        try:
            _set(data, pointer, value)
        except (KeyError, IndexError, TypeError):
            continue
    (root / "expert.yaml").write_text(yaml.safe_dump(data))
    path = root / "processes" / "triage-ticket.md"
    _, front, body = PROCESS_TEXT.split("---", 2)
    meta = yaml.safe_load(front)
    meta[process_edit[0]] = process_edit[1]
    path.write_text("---\n" + yaml.safe_dump(meta) + "---" + body)
    findings = validate_package(load_package(root), get_host())
    assert all(f.code.startswith("OEX") and f.file for f in findings)
