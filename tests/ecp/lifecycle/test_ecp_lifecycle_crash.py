"""Crash safety: a real ``agentpack ecp refresh`` process is SIGKILLed at every named point (and at
timed moments); the last published index must stay intact and queryable, and the next refresh
must finish the job."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agentpack.io.proc import kill_group, spawn
from agentpack.testing import run_cli
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.lifecycle.refresh import refresh
from agentpack_ecp.pack import layout

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
OLD, NEW = "one hour", "two hours"


def _make(root: Path, kit) -> Path:
    pack = kit.write_pack(root, indexes=(("kw", "keyword"), ("fts", "keyword", "sqlite-fts")))
    build_pack(pack)
    return pack


def _change(pack: Path) -> None:
    (pack / "expert/sources/docs/tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")


def _answers(pack: Path) -> set[str]:
    """Which version each index serves; every index must answer."""
    seen = set()
    for mode in ("keyword", "fts"):
        result = run_cli(["query", pack, "access tokens expire", "--mode", mode, "--json"])
        assert result.exit_code == 0, result.stderr
        response = result.json()["response"]
        assert all(i["status"] in ("ok", "skipped") for i in response["retrieval"]["indexes"]), response["retrieval"]
        text = " ".join(c["snippet"] for c in response["chunks"])
        seen |= {v for v in (OLD, NEW) if v in text}
    return seen


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPACK_ECP_CRASH")}
    env.update(extra)
    return env


SCENARIOS = {
    # name: (prepare the pack after its first build, the command that publishes, the version it publishes)
    "build": (_change, ["ecp", "build"], NEW),
    "rebuild": (_change, ["ecp", "build", "--rebuild"], NEW),  # the streaming full build (build.batch)
    "refresh": (_change, ["ecp", "refresh"], NEW),
    "rollback": (lambda pack: (_change(pack), refresh(pack)), ["ecp", "rollback"], OLD),
}
KILLED: set[str] = set()
"""Crash points the harness killed a process at (checked against every point in the code)."""


def _staging_left(pack: Path) -> list[str]:
    from agentpack_ecp.pack import leftovers

    return leftovers.find(pack, ["expert/context/indexes/kw", "expert/context/indexes/fts"])


def _strict_codes(pack: Path) -> set[str]:
    report = run_cli(["validate", pack, "--strict", "--json"]).json()
    return {f["code"] for item in report["items"] for f in item["findings"] if f["severity"] == "error"}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_crash_points_of_a_publish(tmp_path: Path, kit, scenario: str) -> None:
    """Kill the command at every crash point it passes; then a query serves one version only (the
    old one until the journal is written, the new one from then on: the query finishes the journal),
    validate --strict flags what the kill left, and the next command leaves nothing behind."""
    prepare, command, published = SCENARIOS[scenario]
    base = _make(tmp_path / "base", kit)
    prepare(base)
    before = _answers(base)
    assert len(before) == 1
    trace = tmp_path / "trace.txt"
    probe = tmp_path / "probe"
    shutil.copytree(base.parent, probe)
    done = subprocess.run(
        [AGENTPACK, *command, str(probe / base.name)],
        env=_env(AGENTPACK_ECP_CRASH_TRACE=str(trace)),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _answers(probe / base.name) == {published}
    points = trace.read_text().split()
    assert "publish.after_journal" in points and "publish.after_manifest" in points, points
    for n, name in enumerate(points, 1):
        work = tmp_path / f"run{n}"
        shutil.copytree(base.parent, work)
        pack = work / base.name
        proc = subprocess.run(
            [AGENTPACK, *command, str(pack)],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(AGENTPACK_ECP_CRASH_AT="*", AGENTPACK_ECP_CRASH_SKIP=str(n)),
        )
        assert proc.returncode == -signal.SIGKILL, (name, proc.stderr)
        KILLED.add(name)
        journalled = points.index("publish.after_journal") < n
        if not journalled:
            assert "ECP113" in _strict_codes(pack) or not _staging_left(pack), name
        assert _answers(pack) == ({published} if journalled else before), name  # never a mix
        assert not layout.journal_path(pack).exists(), name
        manifest = yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())
        served = yaml.safe_load((pack / "expert/context/indexes/kw/index_data.json").read_text())
        assert manifest["sources"][0]["revision"]["hash"] == served["sources"][0]["revision"]["hash"], name
        if scenario == "rollback":
            assert run_cli(["ecp", "prune", pack]).exit_code == 0, name
        else:
            assert run_cli([*command, pack]).exit_code == 0, name
            assert _answers(pack) == {published}, name
        assert not _staging_left(pack) and "ECP113" not in _strict_codes(pack), name


@pytest.mark.parametrize(
    ("killed", "point", "cleaner"),
    [
        (["ecp", "build"], "build.after_stage", ["ecp", "prune"]),
        (["ecp", "refresh"], "refresh.after_build", ["ecp", "build"]),
        (["ecp", "build", "--rebuild"], "build.after_stage", ["ecp", "refresh"]),
    ],
)
def test_leftovers_are_flagged_and_the_next_command_removes_them(
    tmp_path: Path, kit, killed: list[str], point: str, cleaner: list[str]
) -> None:
    pack = _make(tmp_path, kit)
    _change(pack)
    proc = subprocess.run(
        [AGENTPACK, *killed, str(pack)], check=False, capture_output=True, env=_env(AGENTPACK_ECP_CRASH_AT=point)
    )
    assert proc.returncode == -signal.SIGKILL
    (pack / "expert/context/indexes/.staging-kw-4242").mkdir()  # where earlier versions staged a build
    left = _staging_left(pack)
    assert "expert/context/indexes/.staging-kw-4242" in left and len(left) == 2, left
    report = run_cli(["validate", pack, "--json"]).json()
    flagged = {f["file"]: f["severity"] for f in report["items"][0]["findings"] if f["code"] == "ECP113"}
    assert set(flagged) == set(left) and set(flagged.values()) == {"warning"}, flagged
    assert "ECP113" in _strict_codes(pack)
    assert run_cli([*cleaner, pack]).exit_code == 0
    assert not _staging_left(pack) and "ECP113" not in _strict_codes(pack)


def test_every_crash_point_is_killed_by_the_harness() -> None:
    """Runs after the harness (same module, file order): each ``crashpoint("...")`` of the plugin."""
    import agentpack_ecp

    source = Path(agentpack_ecp.__file__).parent
    named = {m for f in source.rglob("*.py") for m in re.findall(r'crashpoint\("([^"]+)"\)', f.read_text())}
    assert named and named <= KILLED, named - KILLED


def test_timed_kills_never_break_the_published_index(tmp_path: Path, kit) -> None:
    base = _make(tmp_path / "base", kit)
    _change(base)
    for n, delay in enumerate((0.3, 0.6, 0.9)):
        work = tmp_path / f"t{n}"
        shutil.copytree(base.parent, work)
        pack = work / base.name
        proc = spawn(
            [AGENTPACK, "ecp", "refresh", str(pack)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _answers(pack) in ({OLD}, {NEW})
        assert refresh(pack)["exit_status"] == 0
        assert _answers(pack) == {NEW}


def test_a_running_refresh_holds_the_lock(tmp_path: Path, kit) -> None:
    pack = _make(tmp_path, kit)
    _change(pack)
    trace = tmp_path / "trace.txt"
    proc = spawn(
        [AGENTPACK, "ecp", "refresh", str(pack)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(
            AGENTPACK_ECP_CRASH_AT="refresh.after_build",
            AGENTPACK_ECP_CRASH_MODE="sleep",
            AGENTPACK_ECP_CRASH_TRACE=str(trace),
        ),
    )
    try:
        for _ in range(600):  # bounded: at most 60 s
            if trace.exists() and "sleeping at" in trace.read_text():
                break
            time.sleep(0.1)
        else:
            pytest.fail("the refresh never reached its pause point")
        second = run_cli(["ecp", "refresh", pack])
        assert second.exit_code == 2 and "locked by another process" in second.stderr
        assert _answers(pack) == {OLD}
    finally:
        kill_group(proc)
    assert refresh(pack)["decision"] == "published" and _answers(pack) == {NEW}
