"""The tool-call journal in-process: a call a crash left 'started' is reconciled, made again with its key, or
holds the run until a person settles it; hostile tool results fail the call, never the run's output.

A ``BaseException`` raised by a tool stands for the kill: it passes every ``except Exception`` and leaves
the run ``running`` with the call journalled ``started``, as a SIGKILL would (the subprocess tests in
test_openexperts_crash_points.py do it for real).
"""

from __future__ import annotations

import json

import pytest

from agentpack.testing import run_cli


class Killed(BaseException):
    """The process died here."""


def _kill_once(ledger, op, *, after):
    """The first ``op`` call dies before (``after=False``) or after (``after=True``) its side effect."""
    state = {"killed": False}
    real = ledger.record

    def record(name, args):
        if name == op and not state["killed"]:
            state["killed"] = True
            if after:
                real(name, args)
            raise Killed()
        real(name, args)

    ledger.record = record


def _crashed_run(make_runtime, pack, ledger, script, *, after, tools=None):
    _kill_once(ledger, "helpdesk.set_status", after=after)
    rt = make_runtime(pack, tools=tools or ledger.tools(), driver="scripted", driver_options={"script": script})
    with pytest.raises(Killed):
        rt.run_process("triage-ticket", {"ticket_id": "T-7", "customer_id": "C-1"})
    [run] = rt.store.runs()
    assert run["status"] == "running"
    assert [c["status"] for c in rt.store.calls(run["run_id"])][-1] == "started"
    return run["run_id"]


def _resume(make_runtime, pack, ledger, script, tools=None):
    rt = make_runtime(pack, tools=tools or ledger.tools(), driver="scripted", driver_options={"script": script})
    return rt, rt.resume_interrupted()


@pytest.mark.parametrize("after", [False, True], ids=["before-the-effect", "after-the-effect"])
def test_an_unknown_confirm_call_holds_the_run_until_settled(make_runtime, fast, ledger, script, after):
    run_id = _crashed_run(make_runtime, fast, ledger, script, after=after)
    rt, [outcome] = _resume(make_runtime, fast, ledger, script)
    assert outcome.status == "held" and "helpdesk.set_status may or may not have happened" in outcome.error
    assert rt.store.run(run_id)["attempt"] == 1  # a crash uses no attempt
    held = [c for c in rt.store.calls(run_id) if c["status"] == "unknown"]
    assert [c["operation"] for c in held] == ["helpdesk.set_status"] and held[0]["key"].startswith("oex-")
    escalation = [m["data"] for m in rt.store.messages(run_id, kind="escalation")][-1]
    assert "settle" in escalation["recommended_action"]
    assert rt.resume_interrupted() == []  # a held run is not resumed by itself

    happened = "--happened" if after else "--not-happened"
    settled = run_cli(["experts", "settle", fast, run_id, happened, "--workdir", rt.workdir, "--json"])
    assert settled.exit_code == 0 and settled.json()["calls"] == [held[0]["seq"]], settled.stderr
    _, [outcome] = _resume(make_runtime, fast, ledger, script)
    assert outcome.status == "succeeded" and outcome.attempts == 1
    assert ledger.count("helpdesk.set_status") == 1  # performed once, whichever side of it the kill fell


def test_a_binding_that_honours_keys_gets_the_same_key_again(make_runtime, fast, ledger, script):
    from agentpack_openexperts.runtime import PythonBinding, current_key

    keys = []
    tools = ledger.tools()
    set_status = tools["helpdesk"]["set_status"]

    def keyed(ticket_id, status):
        keys.append(current_key())
        if keys.count(current_key()) == 1:  # a repeated key is answered without a second effect
            set_status(ticket_id=ticket_id, status=status)
        return {"ok": True}

    class Keyed(PythonBinding):
        idempotency_keys = True

    tools["helpdesk"]["set_status"] = keyed
    tools = {**tools, "helpdesk": Keyed(tools["helpdesk"])}
    run_id = _crashed_run(make_runtime, fast, ledger, script, after=True, tools=tools)
    rt, [outcome] = _resume(make_runtime, fast, ledger, script, tools=tools)
    assert outcome.status == "succeeded" and ledger.count("helpdesk.set_status") == 1
    assert len(keys) == 2 and keys[0] == keys[1] is not None  # the tool can tell the repeat by its key
    statuses = [c["status"] for c in rt.store.calls(run_id) if c["operation"] == "helpdesk.set_status"]
    assert statuses == ["superseded", "executed"]


def test_a_binding_that_reconciles_answers_for_the_unknown_call(make_runtime, fast, ledger, script):
    class Helpdesk:
        def __getattr__(self, operation):
            operations = ledger.tools()["helpdesk"]
            if operation not in operations:
                raise AttributeError(operation)
            return operations[operation]

        def reconcile(self, operation, arguments, idempotency_key):
            done = ("helpdesk." + operation, arguments) in ledger.calls
            return {"happened": True, "result": {"ok": "from the helpdesk"}} if done else {"happened": False}

    tools = {"helpdesk": Helpdesk(), "crm": ledger.tools()["crm"]}
    run_id = _crashed_run(make_runtime, fast, ledger, script, after=True, tools=tools)
    rt, [outcome] = _resume(make_runtime, fast, ledger, script, tools=tools)
    assert outcome.status == "succeeded" and ledger.count("helpdesk.set_status") == 1
    statuses = [c["status"] for c in rt.store.calls(run_id) if c["operation"] == "helpdesk.set_status"]
    assert statuses == ["reconciled", "replayed"]


def test_an_unknown_auto_call_runs_again(make_runtime, fast, ledger, script):
    _kill_once(ledger, "crm.get_customer", after=False)
    rt = make_runtime(fast, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    with pytest.raises(Killed):
        rt.run_process("triage-ticket", {"ticket_id": "T-7", "customer_id": "C-1"})
    _, [outcome] = _resume(make_runtime, fast, ledger, script)
    assert outcome.status == "succeeded"  # auto: free of external side effects, by the spec


@pytest.mark.parametrize(
    ("name", "value"),
    [("nan", float("nan")), ("infinity", {"n": float("inf")}), ("cycle", "cycle"), ("deep", "deep")],
)
def test_a_result_that_is_not_json_fails_the_call(make_runtime, fast, ledger, script, name, value):
    if value == "cycle":
        value = {}
        value["self"] = value
    elif value == "deep":
        value = []
        for _ in range(5000):
            value = [value]
    tools = ledger.tools()
    tools["crm"]["get_customer"] = lambda customer_id: value
    rt = make_runtime(fast, tools=tools, driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-7", "customer_id": "C-1"})
    assert outcome.status == "failed" and "not JSON" in outcome.error
    json.loads(json.dumps(outcome.to_json()), parse_constant=pytest.fail)  # the outcome stays strict JSON
    statuses = {c["status"] for c in rt.store.calls(outcome.run_id) if c["operation"] == "crm.get_customer"}
    assert statuses == {"failed"}


def test_settle_refuses_a_run_that_is_not_held(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-7", "customer_id": "C-1"})
    result = run_cli(["experts", "settle", acme, outcome.run_id, "--happened", "--workdir", rt.workdir])
    assert result.exit_code == 2 and "not held" in result.stderr


@pytest.mark.parametrize("content", [b"\x00\xff binary", b"def broken(:\n", b"raise RuntimeError('at import')\n"])
def test_a_binding_module_that_cannot_be_imported_is_an_error(acme, tmp_path, content):
    (tmp_path / "tools.py").write_bytes(content)
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text("tools:\n  helpdesk: {python: tools.py:Helpdesk}\n  crm: {python: tools.py:Crm}\n")
    args = ["experts", "dry-run", acme, "triage-ticket", "--input", "ticket_id=T-1", "--bindings", bindings]
    for _ in range(2):  # the second time too: a failed import is not left half-done in sys.modules
        result = run_cli(args)
        assert result.exit_code == 2 and "cannot import binding module" in result.stderr, result.stderr
