"""Property tests: whatever values a suite, the policy or a provenance record hold, loading,
validating, evaluating and querying a pack raise nothing but ``AgentpackError`` (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentpack.io.errors import AgentpackError

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
CASE_KEYS = ["case_id", "mode", "question", "top_k", "filters", "assertions"]
ASSERTIONS = ["must_cite", "min_citations", "max_citations", "answer_must_match", "citations_must_resolve", "x"]
POLICY_KEYS = ["budgets", "refresh_triggers", "update_strategy", "validation", "publishing", "retention"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path_factory.mktemp("props") / "prop-expert"
    scaffold(root)
    build_pack(root)
    return root


def _exercise(root: Path) -> None:
    from agentpack_ecp.evals import evaluate
    from agentpack_ecp.pack.manifest import load_pack
    from agentpack_ecp.query.response import query_pack
    from agentpack_ecp.query.retrieve import IndexCache
    from agentpack_ecp.validate.checks import validate_pack

    try:
        pack = load_pack(root)
        validate_pack(pack, strict=True)
        evaluate(pack, cache=IndexCache()).report()
        query_pack(pack, {"question": "How do I add a source?"}, cache=IndexCache())
    except AgentpackError:
        pass


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(CASE_KEYS), assertion=st.sampled_from(ASSERTIONS), value=VALUES)
def test_any_value_in_a_suite(built: Path, key: str, assertion: str, value) -> None:
    path = built / "expert/evals/conformance.yaml"
    original = path.read_text()
    suite = yaml.safe_load(original)
    case = suite["cases"][0]
    if key == "assertions":
        case.setdefault("assertions", {})[assertion] = value
    else:
        case[key] = value
    try:
        path.write_text(yaml.safe_dump(suite))
        _exercise(built)
    finally:
        path.write_text(original)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(POLICY_KEYS), value=VALUES)
def test_any_value_in_the_policy(built: Path, key: str, value) -> None:
    path = built / "expert/maintenance/policy.json"
    original = path.read_text()
    policy = json.loads(original)
    policy[key] = value
    try:
        path.write_text(json.dumps(policy))
        _exercise(built)
    finally:
        path.write_text(original)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(["chunk_id", "source_id", "artifact_path", "loc", "revision", "chunk_hash"]), value=VALUES)
def test_any_value_in_a_provenance_record(built: Path, key: str, value) -> None:
    indexes = built / "expert/context/indexes"
    paths = sorted(indexes.glob("*/chunks.jsonl"))
    originals = {p: p.read_bytes() for p in paths}
    caches = {p: p.read_bytes() for p in indexes.glob("*/agentpack-cache.npz")}
    try:
        for path in paths:
            lines = path.read_text().splitlines()
            record = json.loads(lines[0])
            record[key] = value
            lines[0] = json.dumps(record)
            path.write_text("\n".join(lines) + "\n")
        _exercise(built)
    finally:
        for path, data in {**originals, **caches}.items():
            path.write_bytes(data)


MANIFEST_FIELDS = [
    ("sources", 0, "uri"),
    ("sources", 0, "scope"),
    ("sources", 0, "revision"),
    ("sources", 0, "type"),
    ("indexes", 0, "chunking"),
    ("indexes", 0, "path"),
    ("indexes", 0, "type"),
    ("indexes", 0, "embedding"),
    ("indexes", 0, "vector"),
    ("summaries", 0, "path"),
    (None, None, "security"),
    (None, None, "skill"),
    (None, None, "profile"),
    (None, None, "logs"),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(MANIFEST_FIELDS), value=VALUES)
def test_any_value_in_the_manifest(built: Path, field, value) -> None:
    path = built / "expert/EXPERT.yaml"
    original = path.read_text()
    manifest = yaml.safe_load(original)
    group, index, key = field
    if group is None:
        manifest[key] = value
    else:
        holder = manifest if group == "sources" else manifest["context"]["artifacts"]
        if not holder.get(group):
            return
        holder[group][index][key] = value
    try:
        path.write_text(yaml.safe_dump(manifest))
        _exercise(built)
    finally:
        path.write_text(original)
