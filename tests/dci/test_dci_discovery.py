"""Discovery order, rejections, deduplication, disabled skills, runtime and external roots, real skills."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dci_helpers import write_skill
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack import hookimpl
from agentpack.io.errors import AgentpackError
from agentpack_dci import schemas_store
from agentpack_dci.config import load_config, state_root
from agentpack_dci.discovery import discover
from agentpack_dci.report import build_report, join_report, split_report
from agentpack_dci.resolve import Resolver, ResolveRequest


def test_order_sources_and_rejections(tmp_path, register_plugin, agentpack_host):
    ws = tmp_path / "ws"
    write_skill(ws, "skills/b/zeta", description="Z.")
    write_skill(ws, "skills/a-b", description="A-B.")
    write_skill(ws, "skills/a/beta", description="B.")
    write_skill(ws, "skills/broken", name="Broken_Name", description="Bad name.")
    (ws / "skills" / "flow").mkdir()
    (ws / "skills" / "flow" / "SKILL.md").write_text("---\nname: flow\ndescription: x\ntags: [a, b]\n---\n")
    write_skill(ws, "skills/.hidden/ghost", description="Never seen.")
    runtime = tmp_path / "runtime"
    write_skill(runtime, "installed", description="Installed by a runtime.")
    external = tmp_path / "external"
    write_skill(external, "mounted", description="Mounted.")
    write_skill(external, "off", description="Disabled by config.")
    (ws / ".dci").mkdir()
    (ws / ".dci" / "config.v1.json").write_text(
        json.dumps(
            {
                "schema_version": "1",
                "external_roots": [str(external), "missing-root"],
                "disabled": ["off"],
                "runtime_roots": ["skills"],
            }
        )
    )

    class Roots:
        @hookimpl
        def agentpack_dci_skill_roots(self, workspace):
            return [runtime]

    register_plugin(Roots())
    r = Resolver(ws, ephemeral_history=True, host=agentpack_host)
    d = r.discovery
    assert [rec.id for rec in d.records] == [
        "a-b::skills/a-b",
        "beta::skills/a/beta",
        "zeta::skills/b/zeta",
        "installed::" + (runtime / "installed").resolve().as_posix(),
        "mounted::" + (external / "mounted").resolve().as_posix(),
    ]
    reasons = {rej.id: rej.reason for rej in d.rejections}
    assert "SKL01" in reasons["skills/broken"] and "flow-style lists" in reasons["skills/flow"]
    assert reasons["zeta::skills/b/zeta"].startswith("duplicate of the candidate found in workspace-local")
    assert reasons["off::" + (external / "off").resolve().as_posix()] == "disabled by .dci/config.v1.json"
    assert d.sources_scanned == ["workspace-local", "runtime-installed", "external-mounts"]
    assert d.counts == {"discovered": 13, "included": 5, "excluded": 8}
    assert {"source": "external-mounts", "root": "missing-root", "exists": False, "skills": 0} in d.roots


def test_sorting_is_by_skill_path(tmp_path):
    ws = tmp_path
    for rel in ("skills/b", "skills/a/c", "skills/a-b", "skills/a"):
        write_skill(ws, rel, description="x")
    found = discover(ws, load_config(ws)).records
    assert [r.path for r in found] == ["skills/a", "skills/a-b", "skills/a/c", "skills/b"]


def test_invalid_config_is_an_error_with_a_line(tmp_path):
    (tmp_path / ".dci").mkdir()
    (tmp_path / ".dci" / "config.v1.json").write_text('{\n  "schema_version": "1",\n  "disabled": "x"\n}\n')
    with pytest.raises(AgentpackError) as info:
        load_config(tmp_path)
    assert info.value.file == ".dci/config.v1.json" and info.value.line == 3


def test_state_root_prefers_the_git_directory(tmp_path):
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert state_root(inner) == tmp_path.resolve()
    assert state_root(tmp_path / "a") == tmp_path.resolve()


def test_symlink_out_of_the_root_is_rejected(tmp_path):
    outside = write_skill(tmp_path / "outside", "evil", description="Outside.")
    ws = tmp_path / "ws"
    (ws / "skills" / "evil").mkdir(parents=True)
    (ws / "skills" / "evil" / "SKILL.md").symlink_to(outside / "SKILL.md")
    d = discover(ws, load_config(ws))
    assert d.records == [] and "outside its root" in d.rejections[0].reason


# -- the 42 real skills of the reference corpus --------------------------------------------------
def test_real_skills_discovery_and_fuzzy_matching(reference_dir, tmp_path):
    r = Resolver(tmp_path, skills_roots=(reference_dir / "pax-skills",), ephemeral_history=True)
    d = r.discovery
    assert d.discovered == 42 and d.counts["included"] + len(d.rejections) == 42
    reasons = {rej.id.rsplit("/", 1)[-1]: rej.reason for rej in d.rejections}
    assert "flow-style" in reasons["create-pr"]  # yolo: [create_pr]
    assert "SKL017" in reasons["hybrid-decision-analysis.v1"]  # dotted name
    assert "SKL010" in reasons["process-pr"]  # fields outside the allowed set
    report = build_report(r.resolve(ResolveRequest(required=["audit-backlog"], decision="abort")))
    assert schemas_store.store().validate(schemas_store.REPORT, report) == []
    top = report["candidates"][0]
    # stemmed "audit-backlog" equals the provisional capability of the skill name "auditing-backlog"
    assert top["name"] == "auditing-backlog"
    assert top["matches"][0] == {
        "capability": "audit-backlog",
        "kind": "provisional",
        "score": 0.25,
        "token": "audit-backlog",
        "similarity": 1.0,
    }
    assert top["scores"]["s_total_final"] > 0.45
    assert all(c["scores"]["s_contract"] in (0.0, 0.25) for c in report["candidates"])  # no contracts there
    assert report["selected_candidates"] == []  # 0.25 < min-contract-score 0.30
    unknown = {u["id"].split("::")[0]: u["tokens"] for u in report["runtime"]["unknown_compatibility_tokens"]}
    assert unknown["capturing-events"] == ["universal"]
    provisional = [m for c in report["candidates"] for m in c["matches"] if m["kind"] == "provisional"]
    assert provisional and all(m["similarity"] >= 0.9 for m in provisional)


def test_report_and_state_shapes_match_the_origin_schemas(reference_dir, tmp_path, agentpack_cli):
    from jsonschema import Draft202012Validator

    origin = {
        name: json.loads((reference_dir / name).read_text())
        for name in (
            "capability-resolution-report.v1.schema.json",
            "reliability.v1.schema.json",
            "aliases.v1.schema.json",
        )
    }
    write_skill(tmp_path, "skills/web-search", description="Search the web.", contract="DCI/1 P(web-search)")
    write_skill(tmp_path, "skills/notes", description="Take notes from the web.")  # no contract: provisional
    r = Resolver(tmp_path)
    r.history.record("web-search::skills/web-search", True)
    validator = Draft202012Validator(origin["capability-resolution-report.v1.schema.json"])

    def written(*args: str) -> dict:
        """The report as `dci resolve -o json` writes it."""
        return agentpack_cli("dci", "resolve", "-w", str(tmp_path), "--json", *args).json()["report"]

    for args in (
        ("-r", "web-search,translation", "--decision", "emulate"),
        ("-r", "web-search,translation", "--decision", "abort", "--mode", "strict"),
        ("-r", "web-search", "--selection", "cover", "--policy", "on-missing-required=hard-fail", "--no-history"),
        ("-r", "translation", "--policy", "on-missing-required=auto-emulate", "--all-candidates"),
    ):
        assert [e.message for e in validator.iter_errors(written(*args))] == [], args
    # the one documented divergence: no user_decision when nothing was missing (nobody was asked)
    quiet = written("-r", "web-search")
    assert [e.message for e in validator.iter_errors(quiet)] == ["'user_decision' is a required property"]
    full = build_report(r.resolve(ResolveRequest(required=["web-search", "translation"], decision="emulate")))
    report, extensions = split_report(full)
    assert list(validator.iter_errors(report)) == [] and join_report(report, extensions) == full
    state = json.loads(r.history.path.read_text())
    assert Draft202012Validator(origin["reliability.v1.schema.json"]).is_valid(state)
    ours = json.loads((Path(schemas_store.__file__).parent / "data" / "builtin-aliases.v1.json").read_text())
    assert Draft202012Validator(origin["aliases.v1.schema.json"]).is_valid(ours)
    # our schemas require at least what the origin's require
    for name, schema_id in (
        ("capability-resolution-report.v1.schema.json", schemas_store.REPORT),
        ("reliability.v1.schema.json", schemas_store.RELIABILITY),
        ("aliases.v1.schema.json", schemas_store.ALIASES),
    ):
        assert set(origin[name]["required"]) <= set(schemas_store.store().schema(schema_id)["required"])


# -- one read per SKILL.md -----------------------------------------------------------------------
CORE_FIXTURES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "skills"


def _verdict(skill, findings):
    return (
        None if skill is None else (skill.meta, skill.ignored),
        [(f.severity, f.code, f.message, f.file, f.line, f.column, f.pointer) for f in findings],
    )


def test_text_given_to_the_core_gives_the_same_verdicts_as_the_core_reading_the_file(reference_dir):
    from agentpack.skills.skillmd import validate_skill_dir
    from agentpack_dci.discovery import _read

    directories = [
        p.parent for root in (CORE_FIXTURES, reference_dir / "pax-skills") for p in sorted(root.rglob("SKILL.md"))
    ]
    assert len(directories) > 50
    for directory in directories:
        text = _read(str(directory / "SKILL.md"))
        if text is None:  # not UTF-8: discovery lets the core read it and report the line
            continue
        assert _verdict(*validate_skill_dir(directory, display="x", text=text)) == _verdict(
            *validate_skill_dir(directory, display="x")
        ), directory


def test_unreadable_files_are_rejected_with_the_core_reason(tmp_path):
    ws = tmp_path
    (ws / "skills" / "latin").mkdir(parents=True)
    (ws / "skills" / "latin" / "SKILL.md").write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\n")
    (ws / "skills" / "crlf").mkdir(parents=True)
    (ws / "skills" / "crlf" / "SKILL.md").write_bytes(b"---\r\nname: crlf\r\ndescription: Windows.\r\n---\r\n")
    (ws / "skills" / "pipe").mkdir(parents=True)
    os.mkfifo(ws / "skills" / "pipe" / "SKILL.md")  # never opened: reading a FIFO would block
    (ws / "skills" / "dangling").mkdir(parents=True)
    (ws / "skills" / "dangling" / "SKILL.md").symlink_to(ws / "skills" / "dangling" / "gone.md")
    d = discover(ws, load_config(ws))
    assert [r.id for r in d.records] == ["crlf::skills/crlf"] and d.records[0].terms == ("crlf", "window")
    reasons = {rej.id: rej.reason for rej in d.rejections}
    assert reasons["skills/latin"].startswith("invalid frontmatter: SKL002 not UTF-8 text")
    assert reasons["skills/latin"].endswith("(skills/latin/SKILL.md:3)")
    assert reasons["skills/pipe"].startswith("invalid frontmatter: SKL001 expected a Markdown file, found a special")
    assert reasons["skills/dangling"].startswith("unreadable:")


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=200)
    | st.text(st.sampled_from("ab\r\n\u2028\x85é-: "), max_size=80).map(str.encode)
    | st.integers(70_000, 140_000).map(lambda n: b"a\r\n" * n)
)
def test_one_read_decodes_as_the_core_reads(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("read") / "SKILL.md"
    path.write_bytes(data)
    try:
        expected = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        expected = None
    from agentpack_dci.discovery import _read

    assert _read(str(path)) == expected
