"""The runner: schema-checked I/O, enforcement (env, time, network, filesystem, process group), reports."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from skillctl_testkit import manifest, wait_until_gone

from agentpack_skillctl import bwrap, confine, sandbox
from agentpack_skillctl.api import run_skill

pytestmark = pytest.mark.timeout(60)


def run(skill: Path, value, workspace: Path, **kw):
    result = run_skill(skill, value, workspace=workspace, **kw)
    return result


def check_report(result, report_validator):
    errors = list(report_validator.iter_errors(result.report))
    assert errors == [], [e.message for e in errors]


def test_ok_run_has_a_valid_report(make_skill, workspace, report_validator):
    result = run(make_skill(), {"value": [1, 2]}, workspace)
    assert result.status == "ok" and result.output == {"echo": [1, 2]}
    check_report(result, report_validator)
    report = result.report
    assert report["skill"]["id"] == "demo.echo" and report["exitCode"] == 0
    assert report["input"]["sha256"] and report["output"]["sha256"] and len(report["skill"]["contentSha256"]) == 64
    assert report["logs"]["records"] == [{"level": "info", "event": "echo"}]


def test_invalid_input_never_starts_the_skill(make_skill, workspace, report_validator):
    skill = make_skill(
        input_schema={"type": "object", "required": ["value"], "properties": {"value": {"type": "integer"}}}
    )
    result = run(skill, {"value": "x"}, workspace)
    assert result.status == "invalid_input" and result.output is None and result.report["exitCode"] is None
    assert result.report["errors"][0]["pointer"] == "/value"
    check_report(result, report_validator)


def test_invalid_output_is_structured(make_skill, workspace, report_validator):
    skill = make_skill(code="import sys, json; json.load(sys.stdin); print(json.dumps({'wrong': 1}))")
    result = run(skill, {}, workspace)
    assert result.status == "invalid_output" and result.report["errors"][0]["side"] == "output"
    check_report(result, report_validator)
    garbage = make_skill("garbage", code="print('not json')")
    assert run(garbage, {}, workspace).status == "invalid_output"


def test_crash_is_failed_with_the_stderr_tail(make_skill, workspace):
    skill = make_skill(code="import sys; sys.stderr.write('boom happened\\n'); sys.exit(3)")
    result = run(skill, {}, workspace)
    assert result.status == "failed" and result.report["exitCode"] == 3
    assert "boom happened" in result.report["errors"][0]["message"]


HANG = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", os.environ["SKILL_DIR"]])
sys.stderr.write("child started\\n")
sys.stderr.flush()
time.sleep(60)
"""


def test_timeout_kills_the_whole_process_group(make_skill, workspace, report_validator):
    skill = make_skill(code=HANG, data=manifest(security__access__subprocess__allowed=True))
    result = run(skill, {}, workspace, timeout_ms=1500)
    assert result.status == "timeout" and result.report["logs"]["invalidLines"] == 1
    assert result.report["enforcement"]["timeout"] == {"ms": 1500, "expired": True, "killed": "process-group"}
    check_report(result, report_validator)
    assert wait_until_gone(str(skill)) == []


def test_children_left_behind_are_killed(make_skill, workspace):
    code = (
        "import json, os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', os.environ['SKILL_DIR']])\n"
        "json.load(sys.stdin); print(json.dumps({'echo': child.pid}))\n"
    )
    skill = make_skill(code=code, data=manifest(security__access__subprocess__allowed=True))
    result = run(skill, {}, workspace)
    subprocess = result.report["enforcement"]["subprocess"]
    assert result.status == "ok"
    if subprocess["level"] == "process-group":  # without the sandbox the runner kills the group itself
        assert subprocess["leftoverKilled"] >= 1
    else:  # the PID namespace ends with the skill's first process
        assert subprocess["level"] == "pid-namespace"
    assert wait_until_gone(str(skill)) == []


def test_stderr_flood_is_bounded_and_counted(make_skill, workspace):
    code = (
        "import json, sys\njson.load(sys.stdin)\n"
        "for i in range(100000): sys.stderr.write(json.dumps({'i': i}) + '\\n')\n"
        "print(json.dumps({'echo': 'done'}))\n"
    )
    passed: list[int] = []
    result = run(make_skill(code=code), {}, workspace, on_stderr=lambda chunk: passed.append(len(chunk)))
    logs = result.report["logs"]
    assert result.status == "ok" and logs["truncated"] is True and logs["bytes"] > 1_000_000
    assert sum(passed) == logs["bytes"] and len(logs["records"]) == 200


ENV_PROBE = """
import json, os, sys
json.load(sys.stdin)
keys = ("SKILLCTL_TEST_SECRET", "SKILLCTL_TEST_GRANTED", "TZ", "SOURCE_DATE_EPOCH", "PYTHONHASHSEED", "HOME")
print(json.dumps({"echo": {k: os.environ.get(k) for k in keys}}))
"""


def test_environment_is_reduced_and_pinned(make_skill, workspace, monkeypatch):
    monkeypatch.setenv("SKILLCTL_TEST_SECRET", "s3cret")
    monkeypatch.setenv("SKILLCTL_TEST_GRANTED", "yes")
    data = manifest(security__access__env__read=["SKILLCTL_TEST_GRANTED"])
    result = run(make_skill(code=ENV_PROBE, data=data), {}, workspace)
    seen = result.output["echo"]
    assert seen["SKILLCTL_TEST_SECRET"] is None and seen["HOME"] is None
    assert seen["SKILLCTL_TEST_GRANTED"] == "yes"
    assert (seen["TZ"], seen["SOURCE_DATE_EPOCH"], seen["PYTHONHASHSEED"]) == ("UTC", "315532800", "0")
    env = result.report["enforcement"]["env"]
    assert env["passed"] == ["SKILLCTL_TEST_GRANTED"] and env["fixed"]["TZ"] == "UTC"


NET_PROBE = """
import json, socket, sys
port = json.load(sys.stdin)["value"]
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    print(json.dumps({"echo": "connected"}))
except OSError as exc:
    print(json.dumps({"echo": "blocked: " + type(exc).__name__}))
"""


def test_network_is_cut_when_forbidden(make_skill, workspace):
    level = sandbox.network_isolation().level
    if level == "none":
        pytest.skip(f"no network namespace here: {sandbox.network_isolation().detail}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        result = run(make_skill(code=NET_PROBE), {"value": port}, workspace)
    assert result.output["echo"].startswith("blocked"), result.output
    assert result.report["enforcement"]["network"]["level"] == level


def test_network_level_none_is_reported(make_skill, workspace, monkeypatch):
    monkeypatch.setenv(sandbox.NETNS_ENV, "off")
    sandbox.network_isolation.cache_clear()
    try:
        result = run(make_skill(), {}, workspace)
    finally:
        monkeypatch.delenv(sandbox.NETNS_ENV)
        sandbox.network_isolation.cache_clear()
    network = result.report["enforcement"]["network"]
    assert network["level"] == "none" and sandbox.NETNS_ENV in network["detail"]


WRITER = """
import json, os, sys
target = json.load(sys.stdin)["value"]
path = os.path.join(os.environ["SKILL_WORKSPACE"], target) if not target.startswith("<skill>/") else target[8:]
os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
open(path, "w").write("x")
print(json.dumps({"echo": target}))
"""


@pytest.mark.parametrize("mode", ["sandbox", "no sandbox"])
def test_writes_outside_the_globs_are_a_violation(make_skill, workspace, report_validator, monkeypatch, mode):
    if mode == "no sandbox":
        monkeypatch.setenv(confine.SANDBOX_ENV, "off")
    elif bwrap.probe().error:
        pytest.skip(bwrap.probe().error)
    data = manifest(security__access__filesystem__write=["out/**"])
    skill = make_skill(code=WRITER, data=data)
    ok = run(skill, {"value": "out/a/b.txt"}, workspace)
    assert ok.status == "ok"
    assert ok.report["enforcement"]["filesystem"]["declaredWrites"] == ["out/", "out/a/", "out/a/b.txt"]
    for target, seen in (("elsewhere.txt", "elsewhere.txt"), ("<skill>/impl/note.txt", "<skill>/impl/note.txt")):
        bad = run(skill, {"value": target}, workspace)
        check_report(bad, report_validator)
        assert bad.output is None
        if mode == "sandbox":  # the write fails at the system call
            assert bad.status == "failed" and "Read-only file system" in bad.report["errors"][0]["message"]
            assert bad.report["enforcement"]["filesystem"]["level"] == "enforce"
        else:  # the write happens and is found afterwards
            assert bad.status == "violation"
            assert bad.report["enforcement"]["filesystem"]["undeclaredWrites"] == [seen]
    assert not (workspace / "elsewhere.txt").exists() or mode == "no sandbox"


def test_check_determinism(make_skill, workspace):
    stable = run(make_skill(), {"value": 1}, workspace, check_determinism=True)
    assert stable.status == "ok" and stable.report["determinismCheck"]["identical"] is True
    code = "import json, os, sys; json.load(sys.stdin); print(json.dumps({'echo': os.urandom(8).hex()}))"
    flaky = run(make_skill("flaky", code=code), {}, workspace, check_determinism=True)
    assert flaky.status == "nondeterministic" and flaky.report["determinismCheck"]["identical"] is False


def test_cache_hits_only_for_eligible_skills(make_skill, workspace, tmp_path):
    cache = tmp_path / "cache"
    skill = make_skill()
    first = run(skill, {"value": 7}, workspace, cache=True, cache_dir=cache)
    second = run(skill, {"value": 7}, workspace, cache=True, cache_dir=cache)
    assert first.report["cache"]["hit"] is False and second.report["cache"]["hit"] is True
    assert second.output == first.output and second.report["exitCode"] == 0
    other = run(skill, {"value": 8}, workspace, cache=True, cache_dir=cache)
    assert other.report["cache"]["hit"] is False
    reader = make_skill("reader", data=manifest("demo.reader", security__access__filesystem__read=["**"]))
    for _ in range(2):
        result = run(reader, {"value": 7}, workspace, cache=True, cache_dir=cache)
    assert result.report["cache"] == {
        "eligible": False,
        "hit": False,
        "key": None,
        "reason": result.report["cache"]["reason"],
    }
    timed = make_skill("timed", data=manifest("demo.timed", determinism__time="input_only"))
    assert run(timed, {}, workspace, cache=True, cache_dir=cache).report["cache"]["eligible"] is False


def test_missing_command_is_an_error_status(make_skill, workspace):
    data = manifest(runtime__command=["no-such-program-skillctl"], runtime__type="command")
    result = run(make_skill(data=data), {}, workspace)
    assert result.status == "error" and "no-such-program-skillctl" in result.report["errors"][0]["message"]


def test_raw_input_that_is_not_json(make_skill, workspace):
    from agentpack_skillctl.prepare import prepare
    from agentpack_skillctl.runner import RunOptions, run_prepared

    result = run_prepared(prepare(make_skill()), RunOptions(workspace=workspace), raw=b"{not json")
    assert result.status == "invalid_input" and result.report["errors"][0]["code"] == "input_json"


def test_invalid_skill_is_refused_with_a_location(make_skill, workspace):
    from agentpack_skillctl.prepare import SkillInvalidError

    skill = make_skill(data=manifest(version="one"))
    with pytest.raises(SkillInvalidError) as info:
        run(skill, {}, workspace)
    assert info.value.file.endswith("skill.yaml") and info.value.line == 5


def test_run_by_id_from_a_root(make_skill, workspace):
    skill = make_skill()
    result = run_skill("demo.echo", {"value": "x"}, root=skill.parent, workspace=workspace)
    assert result.ok and result.output == {"echo": "x"}


def test_edits_to_the_contract_are_picked_up(make_skill, workspace):
    skill = make_skill()
    assert run(skill, {"value": 1}, workspace).ok
    schema = {"type": "object", "required": ["value"], "properties": {"value": {"type": "string"}}}
    (skill / "schemas" / "input.schema.json").write_text(json.dumps(schema))
    os.utime(skill / "schemas" / "input.schema.json", ns=(time.time_ns() + 10**9,) * 2)
    assert run(skill, {"value": 1}, workspace).status == "invalid_input"
