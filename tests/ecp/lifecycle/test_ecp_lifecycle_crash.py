"""Crash safety: a real ``agentpack ecp refresh`` process is SIGKILLed at every named point (and at
timed moments); the last published index must stay intact and queryable, and the next refresh
must finish the job."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from agentpack.proc import kill_group, spawn
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


def test_crash_points_of_a_refresh(tmp_path: Path, kit) -> None:
    base = _make(tmp_path / "base", kit)
    _change(base)
    trace = tmp_path / "trace.txt"
    probe = tmp_path / "probe"
    shutil.copytree(base.parent, probe)
    done = subprocess.run(
        [AGENTPACK, "ecp", "refresh", str(probe / base.name)],
        env=_env(AGENTPACK_ECP_CRASH_TRACE=str(trace)),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    points = trace.read_text().split()
    assert {
        "refresh.after_build",
        "refresh.after_evals",
        "publish.after_journal",
        "publish.after_swap",
        "publish.after_manifest",
    } <= set(points)
    for n, name in enumerate(points, 1):
        work = tmp_path / f"run{n}"
        shutil.copytree(base.parent, work)
        pack = work / base.name
        proc = subprocess.run(
            [AGENTPACK, "ecp", "refresh", str(pack)],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(AGENTPACK_ECP_CRASH_AT="*", AGENTPACK_ECP_CRASH_SKIP=str(n)),
        )
        assert proc.returncode == -signal.SIGKILL, (name, proc.stderr)
        served = _answers(pack)
        assert len(served) == 1 or name.startswith("publish."), (name, served)  # before publishing: only OLD
        if not name.startswith("publish."):
            assert served == {OLD}, name
        result = refresh(pack)
        assert result["exit_status"] == 0, (name, result)
        assert _answers(pack) == {NEW}, name
        assert not layout.journal_path(pack).exists() and not list((pack / layout.STAGING).iterdir())
        manifest = yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())
        built = yaml.safe_load((pack / "expert/context/indexes/kw/index_data.json").read_text())
        assert manifest["sources"][0]["revision"]["hash"] == built["sources"][0]["revision"]["hash"], name


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
