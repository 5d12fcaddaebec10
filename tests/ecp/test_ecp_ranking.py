"""The last ranking step (``query/ranking.py``): file roles, per-file diversity, the pack's settings, explain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.errors import AgentpackError
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.pack.ranking import RankingSettings, ranking_settings
from agentpack_ecp.query.ranking import arrange, path_role
from agentpack_ecp.query.response import query_pack
from agentpack_ecp.query.retrieve import Hit

IMPLEMENTATION = '''"""Run a child process and talk to it through pipes."""


class Popen:
    """A child process whose stdin, stdout and stderr may be pipes."""

    def communicate(self, data=None):
        """Send data to the child's stdin pipe, read its stdout and stderr pipes until the end."""
        return self._read_pipes(data)
'''

TEST_MODULE = """import unittest

from popen import Popen


class PopenCommunicateTest(unittest.TestCase):
    def test_communicate_pipes(self):
        p = Popen(["cat"])  # communicate through the pipes of Popen
        self.assertEqual(p.communicate(b"pipes"), (b"pipes", b""))

    def test_communicate_pipes_twice(self):
        p = Popen(["cat"])  # Popen communicate pipes again
        p.communicate(b"pipes")
"""


def make_pack(tmp_path: Path, files: dict[str, str], ranking: str = "") -> Path:
    """A keyword pack over ``files`` (markdown, text and Python), with ``ranking`` under ``context:``."""
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path / "pack"
    scaffold(root)
    docs = root / "expert" / "sources" / "docs"
    for path in list(docs.iterdir()):
        path.unlink()
    for rel, text in files.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    manifest = root / "expert" / "EXPERT.yaml"
    text = manifest.read_text().replace('include: ["**/*.md", "**/*.txt"]', 'include: ["**/*.md", "**/*.py"]')
    if ranking:
        text = text.replace("context:\n", "context:\n  ranking:\n" + ranking, 1)
    manifest.write_text(text)
    build_pack(root)
    return root


def cited(root: Path, question: str, top_k: int = 5) -> list[str]:
    response = query_pack(load_pack(root), {"question": question, "top_k": top_k, "mode": "keyword"})
    return [c["artifact_path"] for c in response["citations"]]


def test_a_test_module_does_not_outrank_the_module_it_tests(tmp_path: Path) -> None:
    files = {"popen.py": IMPLEMENTATION, "tests/test_popen.py": TEST_MODULE}
    assert cited(make_pack(tmp_path / "a", files), "How does Popen communicate with pipes?")[:2] == [
        "popen.py",
        "tests/test_popen.py",
    ]
    # the same corpus with the role weight turned off: the test module's repeated names put it first
    off = make_pack(tmp_path / "b", files, "    roles:\n      test: {weight: 1}\n")
    assert cited(off, "How does Popen communicate with pipes?")[0] == "tests/test_popen.py"


def test_a_test_module_is_known_by_its_content_too(tmp_path: Path) -> None:
    files = {"popen.py": IMPLEMENTATION, "checks.py": TEST_MODULE}
    assert cited(make_pack(tmp_path, files), "How does Popen communicate with pipes?")[0] == "popen.py"


LONG = "".join(
    f"## Cache eviction, part {i}\n\nThe cache evicts entries: eviction of cache entries by age and size.\n" * 6
    for i in range(8)
)


def test_one_long_file_does_not_fill_the_top_k(tmp_path: Path) -> None:
    files = {
        "guide.md": LONG,
        "eviction.md": "# Eviction\n\nWhen the cache is full, eviction drops the oldest entries.\n",
        "sizing.md": "# Cache sizing\n\nThe cache size bounds eviction.\n",
        "unrelated.md": "# Logging\n\nLog lines go to stderr.\n",
    }
    top = cited(make_pack(tmp_path / "a", files), "cache eviction", top_k=3)
    assert sorted(top) == ["eviction.md", "guide.md", "sizing.md"]
    off = make_pack(tmp_path / "b", files, "    diversity: 1\n")
    assert cited(off, "cache eviction", top_k=3) == ["eviction.md", "guide.md", "guide.md"]  # sizing.md out


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("Lib/test/test_subprocess.py", "test"),
        ("t/op/sort.t", "test"),
        ("src/widget_test.go", "test"),
        ("web/app.spec.ts", "test"),
        ("conftest.py", "test"),
        ("docs/examples/quickstart.py", "example"),
        ("example.py", "example"),
        ("pkg/_vendor/six.py", "vendored"),
        ("node_modules/left-pad/index.js", "vendored"),
        ("proto/api_pb2.py", "generated"),
        ("static/app.min.js", "generated"),
        ("subprocess.py", None),
        ("testament.md", None),
        ("contest/rules.md", None),
        ("latest/notes.md", None),
        ("Test/More.pm", None),
    ],
)
def test_path_roles(path: str, role: str | None) -> None:
    assert path_role(path, RankingSettings()) == role


def _hit(key: str, path: str, score: float, text: str = "", start: int = 1) -> Hit:
    record = {"chunk_id": key, "artifact_path": path, "loc": {"start_line": start, "end_line": start + 1}}
    return Hit(key, score, "ix", record, text, {})


def test_a_generated_mark_counts_only_in_the_head_of_a_file() -> None:
    head = "# Code generated by protoc. DO NOT EDIT.\nx = 1\n"
    hits = [_hit("g", "gen.py", 1.0, head), _hit("h", "hand.py", 0.9, "x = 2\n")]
    assert [h.key for h in arrange(hits, 2, RankingSettings())] == ["h", "g"]
    later = [_hit("g", "gen.py", 1.0, head, start=40), _hit("h", "hand.py", 0.9, "x = 2\n")]
    assert [h.key for h in arrange(later, 2, RankingSettings())] == ["g", "h"]
    # a man page made from POD is the documentation itself, not a copy of a source beside it
    man = [_hit("m", "man1/tool.1", 1.0, '.\\" Automatically generated by Pod::Man 4.14\n.TH TOOL 1\n'), hits[1]]
    assert [h.key for h in arrange(man, 2, RankingSettings())] == ["m", "h"]


def test_negative_scores_still_rank_down() -> None:
    hits = [_hit("t", "tests/a.py", -0.1), _hit("m", "a.py", -0.15)]
    assert [h.key for h in arrange(hits, 2, RankingSettings())] == ["m", "t"]


def test_a_role_of_the_packs_own(tmp_path: Path) -> None:
    files = {
        "popen.py": IMPLEMENTATION,
        "notes/popen-notes.md": "Popen communicate pipes: Popen communicate pipes, Popen pipes communicate.\n",
    }
    assert cited(make_pack(tmp_path / "a", files), "Popen communicate pipes")[0] == "notes/popen-notes.md"
    own = make_pack(tmp_path / "b", files, '    roles:\n      notes: {weight: 0.2, paths: ["notes/*"]}\n')
    assert cited(own, "Popen communicate pipes")[0] == "popen.py"


@pytest.mark.parametrize(
    ("ranking", "message"),
    [
        ("    diversity: 2\n", "/context/ranking/diversity: expected a number from 0 to 1, got 2"),
        ("    roles: [test]\n", "/context/ranking/roles: expected a mapping"),
        ("    roles:\n      mine: {paths: [x/*]}\n", "/context/ranking/roles/mine: expected a weight"),
        ("    roles:\n      test: {weight: yes}\n", "/context/ranking/roles/test/weight: expected a number"),
        ("    roles:\n      test: {paths: x}\n", "/context/ranking/roles/test/paths: expected a list"),
    ],
)
def test_bad_ranking_settings_are_located_errors(tmp_path: Path, ranking: str, message: str) -> None:
    root = make_pack(tmp_path, {"a.md": "alpha\n"})
    manifest = root / "expert" / "EXPERT.yaml"
    manifest.write_text(manifest.read_text().replace("context:\n", "context:\n  ranking:\n" + ranking, 1))
    with pytest.raises(AgentpackError, match=message) as info:
        ranking_settings(load_pack(root))
    assert info.value.file and info.value.file.endswith("EXPERT.yaml")
    assert (info.value.line or 0) > manifest.read_text().splitlines().index("context:")


def test_explain_shows_the_ranking_features_through_the_cli(tmp_path: Path) -> None:
    root = make_pack(tmp_path, {"popen.py": IMPLEMENTATION, "tests/test_popen.py": TEST_MODULE})
    argv = [sys.executable, "-m", "agentpack", "query", str(root), "Popen communicate pipes", "-o", "json"]
    out = subprocess.run([*argv, "--option", "explain=true"], capture_output=True, text=True, check=True)
    chunks = json.loads(out.stdout)["response"]["chunks"]
    first, test = chunks[0]["explain"], next(c["explain"] for c in chunks if c["path"] == "tests/test_popen.py")
    assert first["role"] is None and first["role_weight"] == 1.0 and first["file_chunk"] == 1
    assert {"index_score", "relative", "fields", "retrieval_score", "diversity_weight", "final"} <= set(first)
    assert first["fields"]["path"] > 0  # the question names the module
    assert test["role"] == "test" and test["role_weight"] == 0.5
    assert test["final"] == pytest.approx(test["retrieval_score"] * 0.5, abs=1e-5)
    plain = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert all("explain" not in c for c in json.loads(plain.stdout)["response"]["chunks"])


def test_validate_reports_bad_ranking_settings(tmp_path: Path) -> None:
    root = make_pack(tmp_path, {"a.md": "alpha\n"})
    argv = [sys.executable, "-m", "agentpack", "validate", str(root)]
    assert "ECP190" not in subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    manifest = root / "expert" / "EXPERT.yaml"
    manifest.write_text(manifest.read_text().replace("context:\n", "context:\n  ranking:\n    diversity: -1\n", 1))
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    line = manifest.read_text().splitlines().index("    diversity: -1") + 1
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ECP190" in done.stdout and f"EXPERT.yaml:{line}" in done.stdout
    assert "/context/ranking/diversity: expected a number from 0 to 1, got -1" in done.stdout


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-2, 2)
    | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["weight", "paths", "test", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(diversity=JSONISH, roles=JSONISH)
def test_any_ranking_settings_parse_or_fail_located(diversity, roles) -> None:
    """Whatever context.ranking holds, reading it gives settings in range or an AgentpackError with its line."""
    from agentpack.io.yamlio import parse_yaml
    from agentpack_ecp.pack.manifest import ExpertPack

    text = json.dumps({"context": {"ranking": {"diversity": diversity, "roles": roles}}}, indent=1, ensure_ascii=False)
    pack = ExpertPack(Path("."), parse_yaml(text, file="expert/EXPERT.yaml"))
    try:
        got = ranking_settings(pack)
    except AgentpackError as exc:
        assert exc.file == "expert/EXPERT.yaml" and exc.line
        return
    assert 0 <= got.diversity <= 1 and all(0 <= w <= 1 for w in got.weights.values())
