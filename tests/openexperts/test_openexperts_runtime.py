"""The runtime through its Python API: tiers, approvals, failures, retries, state, scratch, privacy."""

import json
import sqlite3
import threading
import time

import pytest

from agentpack.io.errors import AgentpackError


def messages(rt, kind=None):
    return [m["data"] for m in rt.store.messages(kind=kind)]


def test_run_delivers_the_result_and_never_executes_manual(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-7", "customer_id": "C-1"})
    assert outcome.status == "succeeded" and outcome.attempts == 1
    assert outcome.result["structured"]["classification"] == {"category": "how_to", "priority": "p3"}
    assert outcome.result["narrative"].startswith("Ticket T-7 from Customer C-1")
    assert ledger.count("helpdesk.add_internal_note") == 1 and ledger.count("helpdesk.set_status") == 1
    assert ledger.count("helpdesk.reply") == 0  # manual: drafted, never executed
    draft = messages(rt, "draft")[0]
    assert draft["operation"] == "helpdesk.reply" and draft["arguments"]["ticket_id"] == "T-7"
    escalation = messages(rt, "escalation")[0]  # on_manual_ready
    assert {"process", "reason", "context", "recommended_action"} <= set(escalation)
    assert messages(rt, "approval_request")[0]["operation"] == "helpdesk.set_status"
    result = messages(rt, "result")[0]
    assert result["format"] == "both" and result["channel"] == "main"
    # persistent state written in the workdir, the package template untouched, scratch cleaned
    assert "- T-7 p2 Customer C-1" in (rt.workdir / "state" / "queue.md").read_text()
    assert "T-7" not in (acme / "state" / "queue.md").read_text()
    assert not (rt.workdir / "scratch" / "triage-T-7.md").exists()
    tiers = {c["operation"]: (c["tier"], c["status"]) for c in rt.store.calls(outcome.run_id)}
    assert tiers == {
        "helpdesk.get_ticket": ("auto", "executed"),
        "crm.get_customer": ("auto", "executed"),
        "helpdesk.add_internal_note": ("auto", "executed"),
        "helpdesk.set_status": ("confirm", "executed"),
        "helpdesk.reply": ("manual", "draft_delivered"),
    }
    assert [s["step"] for s in rt.store.steps(outcome.run_id)] == list(range(1, 9))


def test_persistent_state_accumulates_across_runs(make_runtime, acme, ledger, script):
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    rt.run_process("triage-ticket", {"ticket_id": "T-1"})
    rt.run_process("triage-ticket", {"ticket_id": "T-2"})
    text = (rt.workdir / "state" / "queue.md").read_text()
    assert "- T-1 " in text and "- T-2 " in text


def test_rejected_confirm_fails_the_attempts_without_repeating_side_effects(make_runtime, fast, ledger, script):
    rt = make_runtime(fast, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker="reject")
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-9"})
    assert outcome.status == "failed" and outcome.attempts == 3
    assert "rejected" in outcome.error
    # the note was written once: attempts 2 and 3 were told steps 1-5 were done and resumed at step 6
    assert ledger.count("helpdesk.add_internal_note") == 1 and ledger.count("helpdesk.set_status") == 0
    assert [s["step"] for s in rt.store.steps(outcome.run_id)] == [1, 2, 3, 4, 5]
    assert [seg["reason"] for seg in rt.store.segments(outcome.run_id)] == ["start", "retry", "retry"]
    escalation = next(m for m in messages(rt, "escalation") if "failed after" in m["reason"])
    assert escalation["process"] == "triage-ticket" and escalation["context"]["inputs"]["ticket_id"] == "T-9"
    assert "re-run" in escalation["recommended_action"]
    delays = [e["data"]["delay_s"] for e in rt.store.events(outcome.run_id) if e["kind"] == "retry_scheduled"]
    assert delays == [0.02, 0.04]  # exponential backoff from 20ms
    assert (rt.workdir / "scratch" / "triage-T-9.md").exists()  # kept on failure


def test_without_log_resumption_the_journal_replays_side_effects(make_runtime, fast, edit_yaml, ledger, script):
    edit_yaml(fast / "expert.yaml", lambda d: d["execution"].update(resume_from_execution_log=False))
    rt = make_runtime(fast, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker="reject")
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-9"})
    assert outcome.status == "failed" and outcome.attempts == 3
    assert ledger.count("helpdesk.add_internal_note") == 1  # attempts 2 and 3 re-ran step 5: replayed
    statuses = [c["status"] for c in rt.store.calls(outcome.run_id) if c["operation"] == "helpdesk.add_internal_note"]
    assert statuses == ["executed", "replayed", "replayed"]


def test_fixed_backoff(make_runtime, fast, edit_yaml, ledger, script):
    edit_yaml(fast / "expert.yaml", lambda d: d["execution"]["retry"].update(backoff="fixed"))
    rt = make_runtime(fast, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker="reject")
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-9"})
    delays = [e["data"]["delay_s"] for e in rt.store.events(outcome.run_id) if e["kind"] == "retry_scheduled"]
    assert delays == [0.02, 0.02]


def test_approval_timeout_rejects(make_runtime, fast, edit_yaml, ledger, script):
    edit_yaml(
        fast / "expert.yaml",
        lambda d: (
            d["policy"]["approval"].update(timeout="100ms", on_timeout="reject"),
            d["execution"]["retry"].update(max_attempts=1),
        ),
    )
    rt = make_runtime(
        fast, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker=lambda request: None
    )
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-3"})
    assert outcome.status == "failed" and "timed out" in outcome.error
    assert [c["status"] for c in rt.store.calls(outcome.run_id)][-1] == "approval_timeout"


def test_approval_timeout_escalates_and_a_late_approval_still_counts(make_runtime, fast, edit_yaml, ledger, script):
    edit_yaml(
        fast / "expert.yaml",
        lambda d: (
            d["policy"]["approval"].update(timeout="100ms", on_timeout="escalate"),
            d["execution"].update(timeout="20s"),
        ),
    )
    late = []

    def listener(message):
        if message["kind"] == "escalation" and "timed out" in message["reason"]:
            late.append(message)
            request_id = message["recommended_action"].split("(request ")[1].rstrip(")").split(")")[0]
            threading.Timer(0.1, lambda: rt.desk.decide(request_id, True, by="late human")).start()

    rt = make_runtime(
        fast,
        tools=ledger.tools(),
        driver="scripted",
        driver_options={"script": script},
        broker=lambda request: None,
        listeners=(listener,),
    )
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-4"})
    assert outcome.status == "succeeded"
    assert len(late) == 1 and late[0]["context"]["arguments"] == {"status": "triaged", "ticket_id": "T-4"}
    assert ledger.count("helpdesk.set_status") == 1


def test_callback_broker_decides_per_operation(make_runtime, acme, ledger, script):
    seen = []
    rt = make_runtime(
        acme,
        tools=ledger.tools(),
        driver="scripted",
        driver_options={"script": script},
        broker=lambda request: seen.append(request.operation) or True,
    )
    assert rt.run_process("triage-ticket", {"ticket_id": "T-5"}).ok
    assert seen == ["helpdesk.set_status"]


def _digest_script(steps):
    return {"processes": {"daily-digest": {"steps": steps, "finish": {"narrative": "digest"}}}}


def test_failing_tool_retries_then_dead_letters_and_replays(make_runtime, acme, edit_front, ledger):
    edit_front(acme / "processes" / "daily-digest.md", lambda d: d["execution"]["retry"].update(delay="10ms"))
    ledger.fail["helpdesk.list_open"] = 5
    script = _digest_script([[{"call": "helpdesk.list_open"}], [], []])
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("daily-digest")
    assert outcome.status == "dead_lettered" and outcome.attempts == 2  # the process's own retry override
    assert "helpdesk.list_open failed" in outcome.error
    letters = rt.store.dead_letters()
    assert len(letters) == 1 and letters[0]["process"] == "daily-digest" and letters[0]["attempts"] == 2
    ledger.fail.clear()
    replay = rt.replay_dead_letter(letters[0]["id"])
    assert replay.ok and rt.store.dead_letters() == []
    with pytest.raises(AgentpackError, match="already replayed"):
        rt.replay_dead_letter(letters[0]["id"])


def test_abandon_is_silent(make_runtime, fast, ledger):
    acme = fast
    ledger.fail["crm.get_customer"] = 10
    script = {
        "processes": {
            "answer-chat": {
                "steps": [[{"call": "crm.get_customer", "args": {"customer_id": "${inputs.customer_id}"}}], []]
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C-1", "question": "?"})
    assert outcome.status == "abandoned"
    assert messages(rt, "escalation") == [] and rt.store.dead_letters() == []


def test_idempotent_process_restarts_from_step_one(make_runtime, acme, edit_front, ledger):
    edit_front(
        acme / "processes" / "answer-chat.md",
        lambda d: d["execution"].update(retry={"max_attempts": 2, "delay": "10ms"}),
    )
    ledger.fail["helpdesk.list_open"] = 0
    calls = {"n": 0}

    def flaky(**args):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("first step flake")

    ledger.hooks["crm.get_customer"] = lambda **a: None
    script = {
        "processes": {
            "answer-chat": {
                "steps": [
                    [{"call": "crm.get_customer", "args": {"customer_id": "C-2"}}],
                    [{"call": "helpdesk.list_open"}],
                ]
            }
        }
    }
    tools = ledger.tools()
    tools["helpdesk"]["list_open"] = lambda: flaky() or []
    rt = make_runtime(acme, tools=tools, driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C-2"})
    assert outcome.ok and outcome.attempts == 2
    assert ledger.count("crm.get_customer") == 2  # idempotent: no replay, a real second call
    assert "replayed" not in [c["status"] for c in rt.store.calls(outcome.run_id)]


def test_timeout_fails_the_attempt(make_runtime, fast, edit_front, ledger):
    acme = fast
    edit_front(acme / "processes" / "answer-chat.md", lambda d: d["execution"].update(timeout="200ms"))
    ledger.hooks["crm.get_customer"] = lambda **a: time.sleep(0.4)
    script = {
        "processes": {
            "answer-chat": {
                "steps": [
                    [{"call": "crm.get_customer", "args": {"customer_id": "C-2"}}],
                    [{"call": "crm.get_customer", "args": {"customer_id": "C-3"}}],
                ]
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C-2"})
    assert outcome.status == "abandoned" and "timeout" in outcome.error and outcome.attempts == 3
    assert ledger.count("crm.get_customer") == 3  # one per attempt: the second call never starts


def test_low_confidence_escalates_instead_of_delivering(make_runtime, acme, ledger):
    script = {
        "processes": {
            "answer-chat": {
                "steps": [[], []],
                "finish": {
                    "structured": {"answer": "maybe?"},
                    "confidence": "low",
                    "recommended_action": "ask billing",
                },
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C-1", "question": "refund?"})
    assert outcome.status == "escalated"
    escalation = messages(rt, "escalation")[0]
    assert escalation["recommended_action"] == "ask billing"
    assert escalation["context"]["outputs"]["structured"] == {"answer": "maybe?"}
    assert messages(rt, "result") == []


@pytest.mark.parametrize("breach,kind", [("warn", "sla_warning"), ("escalate", "escalation")])
def test_sla_breach(make_runtime, acme, edit_front, ledger, breach, kind):
    edit_front(acme / "processes" / "answer-chat.md", lambda d: d["delivery"].update(sla="100ms", sla_breach=breach))
    ledger.hooks["crm.get_customer"] = lambda **a: time.sleep(0.35)
    script = {
        "processes": {"answer-chat": {"steps": [[{"call": "crm.get_customer", "args": {"customer_id": "C"}}], []]}}
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C"})
    assert outcome.ok and outcome.sla_breached
    found = [m for m in messages(rt, kind) if "SLA" in (m.get("message") or m.get("reason") or "")]
    assert len(found) == 1


def test_private_knowledge_never_leaves_the_session(make_runtime, acme, ledger, tmp_path):
    secret = "Dana Whitfield on +49 30 5550 1234"
    script = {
        "processes": {
            "triage-ticket": {
                "steps": [
                    [{"read": "knowledge/escalation-contacts.md", "save": "contacts"}],
                    [{"call": "helpdesk.get_ticket", "args": {"ticket_id": "T-1"}}],
                    [{"call": "helpdesk.add_internal_note", "args": {"ticket_id": "T-1", "body": "${saved.contacts}"}}],
                    [{"escalate": "enterprise: call ${saved.contacts}", "recommended_action": "phone"}],
                    [],
                    [],
                    [],
                    [],
                ],
                "finish": {"narrative": "contacts: ${saved.contacts}", "structured": {"c": "${saved.contacts}"}},
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("triage-ticket", {"ticket_id": "T-1"})
    assert outcome.ok
    assert secret in ledger.calls[1][1]["body"]  # the agent and its tools may use it
    assert secret not in json.dumps(outcome.to_json())
    assert "[private knowledge redacted]" in outcome.result["narrative"]
    db = sqlite3.connect(rt.workdir / "runtime.db")
    for table in ("runs", "calls", "events", "outbox", "steps"):
        for row in db.execute(f"SELECT * FROM {table}"):
            assert secret not in json.dumps(row, default=str), table
    db.close()
    assert "Dana" not in rt.prompts.system()  # private knowledge is not preloaded


def test_private_knowledge_is_redacted_from_every_file_the_runtime_writes(
    make_runtime, fast, ledger, edit_yaml, caplog
):
    marker = "PRIVATE-MARKER-7731 the vault code for night escalations"
    contacts = fast / "knowledge" / "escalation-contacts.md"
    contacts.write_text(contacts.read_text() + f"\n{marker}\n")
    edit_yaml(fast / "expert.yaml", lambda d: d["execution"].update(on_failure="dead_letter"))
    script = {
        "processes": {
            "triage-ticket": {
                "steps": [
                    [{"read": "knowledge/escalation-contacts.md", "save": "contacts"}],
                    [{"call": "helpdesk.add_internal_note", "args": {"ticket_id": "T-1", "body": "${saved.contacts}"}}],
                    [{"write": "state/queue.md", "content": "notes: ${saved.contacts}"}],
                    [{"write": "state/session-notes.md", "content": "${saved.contacts}"}],
                    [{"escalate": "call ${saved.contacts}", "recommended_action": "${saved.contacts}"}],
                    [],
                    [],
                    [],
                ],
                "finish": {"narrative": "${saved.contacts}", "structured": {"c": "${saved.contacts}"}},
            },
            "daily-digest": {"steps": [[{"fail": f"it broke near {marker}"}]]},
        }
    }

    class Crashing:
        """Crashes in answer-chat with the private line in its message (logged with a traceback)."""

        def __init__(self, inner):
            self.inner = inner

        def run(self, session):
            if session.process.name == "answer-chat":
                raise RuntimeError(marker)
            return self.inner.run(session)

    from agentpack_openexperts.runtime.drivers import ScriptedDriver

    rt = make_runtime(fast, tools=ledger.tools(), driver=Crashing(ScriptedDriver(script)), keep_scratch=True)
    with caplog.at_level("DEBUG", logger="agentpack.openexperts"):
        assert rt.run_process("triage-ticket", {"ticket_id": "T-1"}).ok
        assert rt.run_process("daily-digest", {"note": marker}).status == "dead_lettered"
        assert not rt.run_process("answer-chat", {"customer_id": "C-1", "question": marker}).ok
    rt.stop()
    assert any(marker in json.dumps(args) for _, args in ledger.calls)  # the agent and its tools may use it
    assert "driver crashed" in caplog.text and "RuntimeError" in caplog.text
    assert marker not in caplog.text
    written = [p for p in rt.workdir.rglob("*") if p.is_file()]
    assert any(p.parent.name == "scratch" for p in written) and any(p.name == "queue.md" for p in written)
    for path in written:
        assert marker.encode() not in path.read_bytes(), path
    assert "[private knowledge redacted]" in (rt.workdir / "state" / "queue.md").read_text()


def test_system_prompt_strategy(make_runtime, acme, ledger):
    rt = make_runtime(acme, tools=ledger.tools())
    prompt = rt.prompts.system()
    assert "# Orchestrator" in prompt and "calm, precise support engineer" in prompt
    assert rt.prompts.preloaded == ["knowledge/troubleshooting-guide.md"]  # static only; dynamic read on demand
    assert "knowledge/incident-status.md" in prompt  # listed for reading


def test_requires_tools_must_be_bound(make_runtime, acme, ledger):
    tools = ledger.tools()
    del tools["crm"]
    rt = make_runtime(acme, tools=tools)
    with pytest.raises(AgentpackError, match="no binding for 'crm'") as info:
        rt.run_process("answer-chat", {"customer_id": "C"})
    assert info.value.file.endswith("expert.yaml") and info.value.line
    with pytest.raises(AgentpackError, match="crm"):
        rt.start()


def test_a_package_with_errors_does_not_start(acme, edit_yaml, tmp_path):
    from agentpack_openexperts.runtime import ExpertRuntime

    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][0].update(process="nope"))
    with pytest.raises(AgentpackError, match="OEX300"):
        ExpertRuntime(acme, workdir=tmp_path / "w")


def test_bad_arguments_go_back_to_the_agent(make_runtime, acme, ledger):
    script = {
        "processes": {
            "answer-chat": {
                "steps": [
                    [
                        {
                            "call": "helpdesk.set_status",
                            "args": {"ticket_id": "T", "status": "closed"},
                            "save": "bad",
                            "expect_error": True,
                        },
                        {"call": "crm.delete_customer", "args": {}, "save": "unknown", "expect_error": True},
                    ],
                    [],
                ],
                "finish": {"structured": {"bad": "${saved.bad.error}", "unknown": "${saved.unknown.error}"}},
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    outcome = rt.run_process("answer-chat", {"customer_id": "C"})
    assert outcome.ok
    assert "/status" in outcome.result["structured"]["bad"] and "closed" in outcome.result["structured"]["bad"]
    assert "no operation 'delete_customer'" in outcome.result["structured"]["unknown"]
    assert ledger.calls == []


def test_session_state_resets_per_isolated_session_and_is_shared_in_main(make_runtime, acme, edit_yaml, ledger):
    script = {
        "processes": {
            "daily-digest": {
                "steps": [
                    [{"read": "state/session-notes.md", "save": "before"}],
                    [],
                    [{"write": "state/session-notes.md", "content": "${saved.before}\ndigest sent"}],
                ],
                "finish": {"narrative": "${saved.before}"},
            }
        }
    }
    rt = make_runtime(acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script})
    first = rt.run_process("daily-digest")
    second = rt.run_process("daily-digest")
    assert "digest sent" not in first.result["narrative"] and "digest sent" not in second.result["narrative"]
    assert not any((rt.workdir / "sessions").glob("run-*"))  # isolated sessions are removed
    rt.stop()
    edit_yaml(acme / "expert.yaml", lambda d: d["triggers"][1].update(session="main"))
    main = make_runtime(
        acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, workdir=rt.workdir
    )
    with main.started(cron=False):
        main.fire("morning_digest", {})
        main.fire("morning_digest", {})
        assert main.wait_idle(20)
        narratives = [r["result"]["narrative"] for r in main.store.runs() if r["session"] == "main"]
    assert narratives[0].count("digest sent") == 0 and narratives[1].count("digest sent") == 1


def test_a_runtime_that_fails_to_assemble_closes_what_it_opened(acme, tmp_path):
    from agentpack_openexperts.runtime import ExpertRuntime

    class Driver:
        closed = False

        def close(self):
            self.closed = True

    driver = Driver()
    with pytest.raises(AgentpackError, match="unknown queue 'no-such-queue'"):
        ExpertRuntime(acme, workdir=tmp_path / "w", driver=driver, queue="no-such-queue")
    assert driver.closed  # its connections are not left to the garbage collector
