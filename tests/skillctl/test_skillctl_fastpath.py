"""The fast run path: the prepared-skill cache on disk (and its invalidation), cached content hashes and
id index, and the network namespace made around the spawn (the calling thread keeps its own)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from skillctl_testkit import manifest, write_skill

from agentpack.io.errors import AgentpackError
from agentpack_skillctl import cache, confine, diskcache, library, netns, prepare, sandbox
from agentpack_skillctl.api import run_skill

pytestmark = pytest.mark.timeout(60)

STRICT_IN = {"type": "object", "required": ["value"], "properties": {"value": {"type": "integer"}}}


def settle(*roots: Path) -> None:
    """Date every file under ``roots`` ten seconds back, so cache entries may be written for them."""
    past = time.time() - 10
    for root in roots:
        paths = [root] if root.is_file() else [p for p in root.rglob("*")]
        for path in paths:
            os.utime(path, (past, past))


def fresh_process() -> None:
    """Forget everything memoised in this process, as a new process would."""
    prepare._CACHE.clear()
    cache._HASHES.clear()
    library._INDEX.clear()


def entries(cache_dir: Path, kind: str) -> list[Path]:
    return sorted((cache_dir / kind).glob("*.json"))


@pytest.fixture
def settled_skill(tmp_path: Path) -> Path:
    skill = write_skill(tmp_path / "skills", "demo-echo", access={"env": {"read": []}})
    settle(tmp_path / "skills")
    return skill


def test_a_prepared_skill_is_stored_and_reused_without_yaml(settled_skill, private_cache_dir, monkeypatch):
    first = prepare.prepare(settled_skill)
    assert len(entries(private_cache_dir, "prepared")) == 1
    fresh_process()
    monkeypatch.setattr(prepare, "load_skill", lambda *a, **k: pytest.fail("the disk entry was not used"))
    second = prepare.prepare(settled_skill)
    assert second is not first and second.skill.data == first.skill.data
    assert (second.argv, second.cwd, second.grants) == (first.argv, first.cwd, first.grants)
    assert (second.input_schema, second.output_schema) == (first.input_schema, first.output_schema)
    assert second.skill.where("/runtime/command") == first.skill.where("/runtime/command")
    assert second.access.doc.data == first.access.doc.data


def _change_manifest(skill: Path) -> None:
    (skill / "skill.yaml").write_text(
        (skill / "skill.yaml").read_text().replace("timeoutMs: 20000", "timeoutMs: 20001")
    )


def _change_schema(skill: Path) -> None:
    (skill / "schemas" / "input.schema.json").write_text(json.dumps(STRICT_IN))


def _add_access(skill: Path) -> None:
    (skill.parent / "_access.yaml").write_text("apiVersion: skill-access/v1\nkind: AccessManifest\nenv: {read: []}\n")


@pytest.mark.parametrize("change", [_change_manifest, _change_schema, _add_access], ids=lambda f: f.__name__[1:])
def test_a_changed_contract_file_invalidates_the_entry(tmp_path, change, private_cache_dir):
    skill = write_skill(tmp_path / "skills", "demo-echo")
    settle(tmp_path / "skills")
    before = prepare.prepare(skill)
    fresh_process()
    change(skill)
    after = prepare.prepare(skill)
    assert after.signature != before.signature
    if change is _change_manifest:
        assert after.skill.timeout_ms == 20001
    elif change is _change_schema:
        assert after.input_schema == STRICT_IN
    else:
        assert after.access is not None and before.access is None


def test_a_stale_entry_falls_back_to_full_validation(tmp_path):
    skill = write_skill(tmp_path / "skills", "demo-echo")
    settle(tmp_path / "skills")
    prepare.prepare(skill)
    fresh_process()
    (skill / "impl" / "run.py").unlink()
    with pytest.raises(prepare.SkillInvalidError) as info:
        prepare.prepare(skill)
    assert "SKC121" in str(info.value)
    fresh_process()
    data = manifest(security__access__env__read=["NOT_ALLOWED"])
    write_skill(tmp_path / "skills", "demo-echo", data=data, access={"env": {"read": []}})
    with pytest.raises(prepare.SkillInvalidError) as info:
        prepare.prepare(skill)
    assert "SKC150" in str(info.value)


def test_entries_of_another_plugin_version_are_ignored(settled_skill, monkeypatch):
    prepare.prepare(settled_skill)
    fresh_process()
    monkeypatch.setattr(diskcache, "__version__", "999.0.0")
    assert diskcache.read(prepare.KIND, os.path.realpath(settled_skill)) is None


def test_recently_changed_files_are_not_cached(make_skill, private_cache_dir):
    prepare.prepare(make_skill())  # written just now: a same-size edit could keep its stamp
    assert entries(private_cache_dir, "prepared") == []


def test_a_corrupt_entry_is_a_miss(settled_skill, private_cache_dir):
    prepare.prepare(settled_skill)
    (entry,) = entries(private_cache_dir, "prepared")
    entry.write_text("{not json")
    fresh_process()
    assert prepare.prepare(settled_skill).skill.id == "demo.echo"


def test_the_cache_can_be_switched_off(settled_skill, private_cache_dir, monkeypatch):
    monkeypatch.setenv(diskcache.DISABLE_ENV, "off")
    prepare.prepare(settled_skill)
    assert entries(private_cache_dir, "prepared") == []


def test_the_reference_runner_names_are_aliases(settled_skill, private_cache_dir, tmp_path, monkeypatch):
    other = tmp_path / "other-cache"
    monkeypatch.delenv("AGENTPACK_SKILLCTL_CACHE_DIR")
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(other))
    assert diskcache.default_dir() == other
    monkeypatch.setenv("AGENTPACK_SKILLCTL_CACHE_DIR", str(private_cache_dir))
    assert diskcache.default_dir() == private_cache_dir  # the AGENTPACK_ name wins
    monkeypatch.setenv("SKILLCTL_PREPARED_CACHE", "off")
    assert not diskcache.enabled()
    monkeypatch.setenv("AGENTPACK_SKILLCTL_PREPARED_CACHE", "on")
    assert diskcache.enabled()


def test_content_hash_is_kept_on_disk_and_follows_changes(settled_skill, private_cache_dir):
    digest = cache.content_hash_cached(settled_skill)
    assert digest == cache.content_hash(settled_skill) and len(entries(private_cache_dir, "content")) == 1
    fresh_process()
    assert cache.content_hash_cached(settled_skill) == digest
    (settled_skill / "impl" / "run.py").write_text("print('{}')  # changed\n")
    fresh_process()
    assert cache.content_hash_cached(settled_skill) == cache.content_hash(settled_skill) != digest


def test_the_id_index_is_kept_on_disk_and_follows_changes(settled_skill, private_cache_dir):
    tree = settled_skill.parent
    assert library.find_skill("demo.echo", tree) == tree / "demo-echo"
    assert len(entries(private_cache_dir, "index")) == 1
    fresh_process()
    assert library.find_skill("demo.echo", tree) == tree / "demo-echo"
    write_skill(tree, "demo-echo", data=manifest("demo.renamed"))
    fresh_process()
    assert library.find_skill("demo.renamed", tree) == tree / "demo-echo"
    with pytest.raises(AgentpackError):
        library.find_skill("demo.echo", tree)


FRESH_RUN = """
import json, sys
from agentpack_skillctl.script import main
code = main(["run", sys.argv[1], "-i", sys.argv[2], "--workspace", sys.argv[3], "--quiet-logs", *sys.argv[4:]])
heavy = [m for m in ("yaml", "jsonschema", "click", "pydantic") if m in sys.modules]
sys.stderr.write(json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


@pytest.mark.parametrize("ref", ["path", "id"])
def test_a_fresh_process_runs_a_cached_skill_without_yaml_or_jsonschema(settled_skill, workspace, ref):
    (workspace / "in.json").write_text('{"value": 3}')
    argv = [
        sys.executable,
        "-c",
        FRESH_RUN,
        str(settled_skill) if ref == "path" else "demo.echo",
        str(workspace / "in.json"),
        str(workspace),
    ]
    env = {**os.environ, "SKILLCTL_ROOT": str(settled_skill.parent)}
    runs = [subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False) for _ in range(2)]
    stats = [json.loads(r.stderr.strip().splitlines()[-1]) for r in runs]
    assert [s["code"] for s in stats] == [0, 0] and json.loads(runs[1].stdout) == {"echo": 3}
    assert "yaml" in stats[0]["heavy"]  # the first run validated the contract
    assert stats[1]["heavy"] == []


def test_the_json_envelope_of_a_fast_run_needs_no_click(settled_skill, workspace):
    (workspace / "in.json").write_text('{"value": 3}')
    argv = [sys.executable, "-c", FRESH_RUN, str(settled_skill), str(workspace / "in.json"), str(workspace), "--json"]
    runs = [subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False) for _ in range(2)]
    stats = json.loads(runs[1].stderr.strip().splitlines()[-1])
    envelope = json.loads(runs[1].stdout)
    assert stats == {"code": 0, "heavy": []} and envelope["command"] == "skill run" and envelope["ok"]
    assert envelope["schema_version"] == 1 and envelope["output"] == {"echo": 3}


# -- the network namespace -----------------------------------------------------------------------------------
NET_PROBE = """
import json, socket, sys
try:
    socket.create_connection(("127.0.0.1", json.load(sys.stdin)["value"]), timeout=2).close()
    print(json.dumps({"echo": "connected"}))
except OSError as exc:
    print(json.dumps({"echo": "blocked"}))
"""


def _connects(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        return True


@pytest.fixture
def without_bwrap(monkeypatch):
    """These tests are about the network namespace used where bubblewrap is not (netns.py)."""
    monkeypatch.setenv(confine.SANDBOX_ENV, "off")


@pytest.fixture
def listener():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def _own_namespace() -> str:
    return os.readlink(netns.OWN_NAMESPACE)


@pytest.mark.parametrize("where", ["main thread", "worker thread"])
def test_the_calling_thread_keeps_its_network(make_skill, workspace, listener, where, without_bwrap):
    if not sandbox.network_isolation().in_thread:
        pytest.skip(f"no in-thread namespace here: {sandbox.network_isolation().detail}")
    skill = make_skill(code=NET_PROBE)
    seen = {}

    def body():
        before = _own_namespace()
        seen["result"] = run_skill(skill, {"value": listener}, workspace=workspace)
        seen["same"] = _own_namespace() == before
        seen["connects"] = _connects(listener)

    if where == "main thread":
        body()
    else:
        thread = threading.Thread(target=body)
        thread.start()
        thread.join(30)
    result = seen["result"]
    assert result.output == {"echo": "blocked"} and result.report["enforcement"]["network"]["level"] == "namespace"
    assert seen["same"] and seen["connects"]


def test_without_permission_for_unshare_the_next_level_is_used(
    make_skill, workspace, listener, monkeypatch, without_bwrap
):
    if not sys.platform.startswith("linux"):
        pytest.skip("network namespaces are Linux only")

    def refused(start):
        raise netns.NamespaceError(1, "unshare(CLONE_NEWNET): Operation not permitted")

    monkeypatch.setattr(netns, "in_fresh_namespace", refused)
    monkeypatch.setattr(sandbox, "_IN_THREAD_FAILED", [])
    sandbox.network_isolation.cache_clear()
    try:
        result = run_skill(make_skill(code=NET_PROBE), {"value": listener}, workspace=workspace)
        fallback = sandbox.network_isolation()
    finally:
        sandbox.network_isolation.cache_clear()
    network = result.report["enforcement"]["network"]
    assert network["level"] == fallback.level and not fallback.in_thread
    if os.geteuid() == 0:
        assert "Operation not permitted" in sandbox._IN_THREAD_FAILED[0]
    if fallback.level != "none":
        assert result.output == {"echo": "blocked"} and "unshare" in network["detail"]


def test_a_contract_that_is_not_exact_json_is_not_stored(tmp_path, private_cache_dir):
    skill = write_skill(tmp_path / "skills", "demo-echo")
    with (skill / "skill.yaml").open("a") as handle:
        handle.write("x-reviewed: 2026-01-01\n")  # a YAML date: JSON would turn it into a string
    settle(tmp_path / "skills")
    prepared = prepare.prepare(skill)
    assert str(prepared.skill.get("x-reviewed")) == "2026-01-01"
    assert entries(private_cache_dir, "prepared") == []


LOOPBACK = """
import fcntl, json, socket, struct, sys
json.load(sys.stdin)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]  # SIOCGIFFLAGS
fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS: bring 'lo' up
print(json.dumps({"echo": "up" if flags & 1 else "down"}))
"""


def test_every_run_gets_a_fresh_namespace(make_skill, workspace, listener, without_bwrap):
    """Each run brings the namespace's loopback up; the next run must still find it down (nothing carries over)."""
    if not sandbox.network_isolation().in_thread or os.geteuid() != 0:
        pytest.skip(f"no in-thread namespace here: {sandbox.network_isolation().detail}")
    skill, probe = make_skill(code=LOOPBACK), make_skill("demo-probe", code=NET_PROBE)
    seen = [run_skill(skill, {}, workspace=workspace) for _ in range(4)]
    assert [r.output for r in seen] == [{"echo": "down"}] * 4, [r.report["errors"] for r in seen]
    assert netns._SPARE, "from the second run on, the next namespace is made ahead of time"
    blocked = [run_skill(probe, {"value": listener}, workspace=workspace).output["echo"] for _ in range(2)]
    assert blocked == ["blocked", "blocked"] and _connects(listener)
